// /docs: an interactive reference of /openapi.json (Redoc), served by this process alone: the page and Redoc's
// standalone bundle come from here, so it works offline and behind a firewall. No token: the contract is public.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Router } from './router.js';
import type { RouteTable } from './app.js';
import { checkParameterNames } from '../pipeline/validation.js';

export const docsPaths = new Set(['/docs', '/docs/redoc.standalone.js']);

/** The page: Redoc reads the contract from this server; nothing is fetched from anywhere else. */
function page(title: string): string {
  const escaped = title.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escaped}: API reference</title>
<style>body { margin: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;
}

export function docsRoutes(title: string): RouteTable {
  // Read at the first request, not at start: most starts never serve the page, and the bundle is 1 MB.
  let bundle: Buffer | undefined;
  const script = () =>
    (bundle ??= readFileSync(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js')));
  const html = page(title);
  const router = new Router();
  router.get('/docs', (ctx) => {
    checkParameterNames(ctx.query);
    ctx.type = 'text/html; charset=utf-8';
    // The page runs Redoc's script from here alone, and reads the contract from here alone.
    ctx.set(
      'Content-Security-Policy',
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
        "worker-src 'self' blob:; font-src 'self' data:",
    );
    ctx.body = html;
  });
  router.get('/docs/redoc.standalone.js', (ctx) => {
    checkParameterNames(ctx.query);
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = script();
  });
  return { router, serves: (path) => docsPaths.has(path) };
}
