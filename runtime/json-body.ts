// Reads a JSON request body: bounded size, right content type, parse errors as INVALID_ARGUMENT.
import type { Middleware } from 'koa';
import { ApiError, invalidArgument } from './errors.js';
import { unsafeJson } from './input-safety.js';

export const maxBodyBytes = 1024 * 1024;

function withStatus(e: ApiError, status: number): ApiError {
  e.httpStatus = status;
  return e;
}

export function jsonBody(limit = maxBodyBytes): Middleware {
  return async (ctx, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit)
      throw withStatus(
        invalidArgument([{ field: '(body)', description: `the body is larger than ${limit} bytes` }]),
        413,
      );
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limit)
        throw withStatus(
          invalidArgument([{ field: '(body)', description: `the body is larger than ${limit} bytes` }]),
          413,
        );
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') return next();
    if (!ctx.is('application/json')) {
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
    (ctx.request as { body?: unknown }).body = parsed;
    return next();
  };
}
