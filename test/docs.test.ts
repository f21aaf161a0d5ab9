// /docs: the interactive reference of /openapi.json, served by this process alone, rendered in a real headless
// Chromium (scripts/tooling/browser.mjs installs it when missing) with every other host unreachable. The screenshot is
// kept as .tmp/docs.png.
import { execFile } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
// @ts-expect-error a plain ESM script without types: ensureChromium() returns the browser's path
import { ensureChromium } from '../scripts/tooling/browser.mjs';
import { startTestServer, type TestServer } from './support/server.js';

const run = promisify(execFile);
let s: TestServer;
let browser: string;

test.before(async () => {
  browser = ensureChromium() as string;
  s = await startTestServer();
});
test.after(async () => s.stop());

/** Chromium headless on a page of ours; any host but loopback fails to resolve, as on a machine offline. */
async function chromium(url: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(
    browser,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--hide-scrollbars',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--virtual-time-budget=20000',
      ...args,
      url,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
  );
  return stdout;
}

test('/docs is an HTML page that loads its script and the contract from this server only, no token needed', async () => {
  const page = await s.call('GET', '/docs', undefined, { authorization: '' });
  assert.is(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(page.body, /<redoc spec-url="\/openapi\.json">/);
  assert.match(page.body, /<script src="\/docs\/redoc\.standalone\.js">/);
  assert.not.match(page.body, /https?:\/\//, 'no address of another host');
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  const script = await fetch(`${s.url}/docs/redoc.standalone.js`);
  assert.is(script.status, 200);
  assert.match(script.headers.get('content-type') ?? '', /^application\/javascript/);
  assert.ok((await script.arrayBuffer()).byteLength > 100_000);
  assert.is((await s.call('POST', '/docs', {}, { authorization: '' })).status, 405);
});

test('in a real browser, offline, the page renders every operation of /openapi.json', async () => {
  const contract = (await s.call('GET', '/openapi.json')).body;
  const operationIds = Object.values<Record<string, { operationId?: string }>>(contract.paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
  );
  assert.ok(operationIds.length > 50, `${operationIds.length} operations`);
  const dom = await chromium(`${s.url}/docs`, '--dump-dom');
  assert.match(dom, new RegExp(`<title>${contract.info.title}`));
  const missing = operationIds.filter((id) => !dom.includes(`id="operation/${id}"`));
  assert.equal(missing, [], 'every operation has its section');
  mkdirSync('.tmp', { recursive: true });
  await chromium(`${s.url}/docs`, '--window-size=1280,900', '--screenshot=.tmp/docs.png');
  assert.ok(statSync('.tmp/docs.png').size > 10_000, 'a screenshot with something on it');
});

test.run();
