// What no request may carry, whatever the route: NUL characters (no field holds one, and they end C strings in
// the layers below), object keys that name a prototype (`__proto__`), and JSON nested deeper than any resource.
import type { FieldViolation } from '../model/errors.js';

/** Deeper than any resource's fields nest (a map inside an object inside a list is 4). */
export const maxJsonDepth = 32;

/**
 * A lone surrogate (a JSON escape such as \ud800 without its pair): no UTF-8 text holds one, so PostgreSQL's
 * JSON refuses it and SQLite would keep it as bytes no client can read back.
 */
const loneSurrogate = /\p{Cs}/u;

/** The first thing a parsed JSON body must not hold, as a field violation; undefined when it holds none. */
export function unsafeJson(value: unknown, path = '(body)', depth = 0): FieldViolation | undefined {
  if (typeof value === 'string') {
    if (value.includes('\0')) return { field: path, description: `${path} must not contain NUL characters` };
    if (loneSurrogate.test(value))
      return { field: path, description: `${path} must be Unicode text: it holds half of a surrogate pair` };
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= maxJsonDepth) return { field: path, description: `the body nests deeper than ${maxJsonDepth} levels` };
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = unsafeJson(v, `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(value)) {
    const at = path === '(body)' ? k : `${path}.${k}`;
    if (k === '__proto__' || k.includes('\0') || loneSurrogate.test(k))
      return { field: at, description: `"${k.replace(/\0/g, '\\u0000')}" is not an allowed field name` };
    const found = unsafeJson(v, at, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** A missing Host header (HTTP/1.1 requires one), or the first NUL character in the path or the query. */
export function unsafeRequestLine(
  path: string,
  query: Record<string, unknown>,
  host: string | undefined,
  httpVersion: string,
): FieldViolation | undefined {
  if (!host && httpVersion === '1.1')
    return { field: 'Host', description: 'an HTTP/1.1 request must carry a Host header' };
  if (path.includes('%00') || path.includes('\0'))
    return { field: '(path)', description: 'the path must not contain NUL characters' };
  for (const [k, v] of Object.entries(query)) {
    if (k.includes('\0'))
      return { field: '(query)', description: 'query parameter names must not contain NUL characters' };
    if ([v].flat().some((x) => typeof x === 'string' && x.includes('\0')))
      return { field: k, description: `${k} must not contain NUL characters` };
  }
  return undefined;
}
