// CORS (Fetch standard), for browsers calling the API from the origins CORS_ORIGINS allows. Credentials are bearer
// tokens, never cookies, so no Allow-Credentials. An origin not allowed gets no CORS header at all: the browser
// then refuses the response, and a preflight from it gets the answer OPTIONS gets without CORS.
import type { HttpContext } from './context.js';

const methods = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** How long a browser may keep a preflight's answer (10 minutes, as Chromium caps it at 2 hours anyway). */
const maxAgeSeconds = '600';
/** Request headers as a preflight lists them: field names separated by commas. */
const headerList = /^[!#$%&'*+.^_`|~\w-]+(?:\s*,\s*[!#$%&'*+.^_`|~\w-]+)*$/;

/**
 * origins: those allowed, or ['*'] for any. Sets the answer's CORS headers before the request goes on; true when
 * the request was a preflight and is answered.
 */
export function cors(origins: string[]): (ctx: HttpContext) => boolean {
  const any = origins.includes('*');
  const allowed = new Set(origins);
  return (ctx) => {
    const origin = ctx.get('origin');
    if (!origin) return false;
    // The answer depends on Origin whenever the origin is checked: caches must keep one per origin.
    if (!any) ctx.vary('Origin');
    if (!any && !allowed.has(origin.toLowerCase())) return false;
    ctx.set('Access-Control-Allow-Origin', any ? '*' : origin);
    const requested = ctx.get('access-control-request-method');
    if (ctx.method === 'OPTIONS' && requested) {
      ctx.vary('Access-Control-Request-Method');
      ctx.vary('Access-Control-Request-Headers');
      ctx.set('Access-Control-Allow-Methods', methods);
      const headers = ctx.get('access-control-request-headers');
      if (headerList.test(headers)) ctx.set('Access-Control-Allow-Headers', headers);
      ctx.set('Access-Control-Max-Age', maxAgeSeconds);
      ctx.status = 204;
      return true;
    }
    ctx.set('Access-Control-Expose-Headers', 'x-request-id, retry-after, allow');
    return false;
  };
}
