// Reads a JSON request body: bounded size, right content type, parse errors as INVALID_ARGUMENT.
import type { IncomingMessage } from 'node:http';
import type { HttpContext } from './context.js';
import { ApiError, invalidArgument } from '../model/errors.js';
import { unsafeJson } from '../pipeline/input-safety.js';

export const maxBodyBytes = 1024 * 1024;

function withStatus(e: ApiError, status: number): ApiError {
  e.httpStatus = status;
  return e;
}

function tooLarge(limit: number): ApiError {
  return withStatus(invalidArgument([{ field: '(body)', description: `the body is larger than ${limit} bytes` }]), 413);
}

const endedEarly = () => invalidArgument([{ field: '(body)', description: 'the body ended early' }]);

/** The body as text, refused once it passes the limit (events, not async iteration: this runs per write). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      // The rest is read and dropped, so the answer can still be written on the connection.
      req.resume();
      reject(tooLarge(limit));
    };
    req.on('data', onData);
    req.once('end', () =>
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    );
    // A client gone mid-body (Node's "aborted") is the client's doing, not a fault of the server.
    req.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ECONNRESET' ? endedEarly() : e));
    // A client gone before the end of its body: nothing to answer, but the request must not wait forever.
    req.once('close', () => {
      if (!req.complete) reject(endedEarly());
    });
  });
}

/** The media type of a Content-Type value, without parameters, in lower case. */
function mediaType(contentType: string): string {
  const end = contentType.indexOf(';');
  return (end < 0 ? contentType : contentType.slice(0, end)).trim().toLowerCase();
}

/** Methods whose body is read; any other request goes on at once. */
const withBody = new Set(['POST', 'PUT', 'PATCH']);

/** Reads the request's body into ctx.requestBody; undefined at once when the method sends none. */
export function jsonBody(limit = maxBodyBytes): (ctx: HttpContext) => Promise<void> | undefined {
  const read = async (ctx: HttpContext): Promise<void> => {
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit) throw tooLarge(limit);
    const text = await readBody(ctx.req, limit);
    if (text.trim() === '') return;
    if (mediaType(ctx.get('content-type')) !== 'application/json') {
      throw withStatus(
        invalidArgument([{ field: 'Content-Type', description: 'the body must be sent as application/json' }]),
        415,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw invalidArgument([{ field: '(body)', description: `the body is not valid JSON: ${(e as Error).message}` }]);
    }
    const unsafe = unsafeJson(parsed);
    if (unsafe) throw invalidArgument([unsafe]);
    ctx.requestBody = parsed;
  };
  return (ctx) => (withBody.has(ctx.method) ? read(ctx) : undefined);
}
