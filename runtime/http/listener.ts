// The HTTP/1.1 listener: deliberate timeouts for slow clients, and structured errors for what Node's parser
// refuses before the application ever sees a request (bad bytes, oversized headers, a request never finished).
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestListener } from './app.js';
import { ApiError } from '../model/errors.js';
import { answeredBeforeItsBody } from './context.js';

export interface ListenOptions {
  port: number;
  host: string;
  /** the whole request (headers and body) must arrive within this many ms */
  requestTimeoutMs: number;
  /** the headers must arrive within this many ms */
  headersTimeoutMs: number;
  /** an idle keep-alive connection is closed after this many ms */
  keepAliveTimeoutMs: number;
  /** connections open at once, h2c ones handed to gRPC included (they stay this server's); beyond, closed */
  maxConnections: number;
  /** the error domain of these answers */
  errorDomain: string;
}

/** What Node's parser reports, as the answer a client gets. */
function refusal(error: NodeJS.ErrnoException): ApiError {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return Object.assign(
      new ApiError('INVALID_ARGUMENT', 'Invalid argument: the request headers are larger than 16 KB'),
      { httpStatus: 431 },
    );
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return Object.assign(new ApiError('INVALID_ARGUMENT', 'Invalid argument: the request did not arrive in time'), {
      httpStatus: 408,
    });
  return new ApiError(
    'INVALID_ARGUMENT',
    `Invalid argument: the request is not valid HTTP/1.1 (${error.code ?? 'unparsable'})`,
  );
}

export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, errorDomain: string): void {
  const started = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  // A request already answered is not answered again when the rest of its body is late: the connection ends.
  if (error.code === 'ECONNRESET' || !socket.writable || started || answeredBeforeItsBody(socket)) {
    socket.destroy();
    return;
  }
  writeRaw(socket, refusal(error), errorDomain);
}

/** An error answer written on a socket that no response object owns, and the connection closed. */
function writeRaw(socket: Duplex, e: ApiError, errorDomain: string): void {
  const body = JSON.stringify(e.body(errorDomain));
  const status = e.status();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * The start of a graceful stop: the port still takes connections (a load balancer has not yet seen /readyz turn
 * 503, and what is already on its way must not be reset), but every answer from now on closes its connection,
 * so no idle keep-alive connection is left to be cut when the port closes.
 */
export function drainConnections(server: Server): void {
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) =>
    res.setHeader('connection', 'close'),
  );
}

/**
 * Stops taking connections and waits for those open to finish their requests; after graceMs the rest are cut,
 * `open` too: the connections the port handed elsewhere (h2c to gRPC) or has not yet handed to anyone.
 */
export function closeWithin(server: Server, graceMs: number, open: Set<Duplex>): Promise<void> {
  return new Promise<void>((resolve) => {
    const grace = setTimeout(() => {
      server.closeAllConnections();
      for (const socket of open) socket.destroy();
    }, graceMs);
    server.close(() => {
      clearTimeout(grace);
      resolve();
    });
    server.closeIdleConnections();
  });
}

export async function listen(app: RequestListener, o: ListenOptions): Promise<Server> {
  const server = createServer(
    {
      requestTimeout: o.requestTimeoutMs,
      headersTimeout: o.headersTimeoutMs,
      // How often Node looks for requests past their time: often enough that the limits hold to about a second.
      connectionsCheckingInterval: Math.min(1000, o.headersTimeoutMs),
      // Node would answer a request without Host with an empty 400; the application answers it in JSON instead.
      requireHostHeader: false,
    },
    app,
  );
  server.keepAliveTimeout = o.keepAliveTimeoutMs;
  server.maxConnections = o.maxConnections;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(error, socket, o.errorDomain),
  );
  // What Node answers by itself with an empty body: an unknown Expect, and CONNECT (no tunnels here).
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const e = Object.assign(
      new ApiError(
        'INVALID_ARGUMENT',
        `Invalid argument: Expect: ${String(req.headers.expect)} is not supported; only 100-continue is`,
      ),
      { httpStatus: 417 },
    );
    const body = JSON.stringify(e.body(o.errorDomain));
    res
      .writeHead(417, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      })
      .end(body);
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const e = Object.assign(new ApiError('UNIMPLEMENTED', 'Method CONNECT is not allowed: this server is no proxy'), {
      httpStatus: 405,
    });
    writeRaw(socket, e, o.errorDomain);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
