// The HTTP/1.1 listener: deliberate timeouts for slow clients, and structured errors for what Node's parser
// refuses before the application ever sees a request (bad bytes, oversized headers, a request never finished).
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { ApiError } from './errors.js';

export interface ListenOptions {
  port: number;
  host: string;
  /** the whole request (headers and body) must arrive within this many ms */
  requestTimeoutMs: number;
  /** the headers must arrive within this many ms */
  headersTimeoutMs: number;
  /** an idle keep-alive connection is closed after this many ms */
  keepAliveTimeoutMs: number;
  /** the error domain of these answers */
  errorDomain: string;
}

/** What Node's parser reports, as the answer a client gets. */
function refusal(error: NodeJS.ErrnoException): ApiError {
  if (error.code === 'HPE_HEADER_OVERFLOW') return Object.assign(new ApiError('INVALID_ARGUMENT', 'Invalid argument: the request headers are larger than 16 KB'), { httpStatus: 431 });
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return Object.assign(new ApiError('INVALID_ARGUMENT', 'Invalid argument: the request did not arrive in time'), { httpStatus: 408 });
  return new ApiError('INVALID_ARGUMENT', `Invalid argument: the request is not valid HTTP/1.1 (${error.code ?? 'unparsable'})`);
}

export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, errorDomain: string): void {
  const started = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (error.code === 'ECONNRESET' || !socket.writable || started) {
    socket.destroy();
    return;
  }
  const e = refusal(error);
  const body = JSON.stringify(e.body(errorDomain));
  const status = e.status();
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export async function listen(app: Koa, o: ListenOptions): Promise<Server> {
  const server = createServer({
    requestTimeout: o.requestTimeoutMs,
    headersTimeout: o.headersTimeoutMs,
    // How often Node looks for requests past their time: often enough that the limits hold to about a second.
    connectionsCheckingInterval: Math.min(1000, o.headersTimeoutMs),
  }, app.callback());
  server.keepAliveTimeout = o.keepAliveTimeoutMs;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => answerClientError(error, socket, o.errorDomain));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
