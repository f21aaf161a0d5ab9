// A real server on a free loopback port with its own data directory, and a small JSON client for it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfig } from '../../runtime/config.js';
import { startServer, type GeneratedParts, type RunningServer } from '../../runtime/server.js';

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

export interface TestServer {
  url: string;
  dataDir: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  stop(): Promise<void>;
}

export async function startTestServer(generated?: GeneratedParts): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-test-'));
  const server: RunningServer = await startServer(readConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG: 'off' }), generated);
  return {
    url: server.url,
    dataDir,
    async call(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const res = await fetch(server.url + path, init);
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: tests assert on the text
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates a root group (organization) and returns its uid. */
export async function createOrg(s: TestServer, name = 'org'): Promise<string> {
  const r = await s.call('POST', '/iam/v2/groups', { name });
  if (r.status !== 200) throw new Error(`cannot create an organization: ${JSON.stringify(r.body)}`);
  return r.body.uid;
}
