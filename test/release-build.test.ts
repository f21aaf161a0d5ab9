// The release folder (npm run build) started as the Dockerfile's image starts it (test/support/release.ts): built
// outside the repository, then the image's CMD in that folder with its ENV (HOST=0.0.0.0; only PORT and DATA_DIR
// point at a free port and a scratch directory), no TypeScript tooling on PATH or in the folder. It answers ping
// over HTTP and gRPC, the image's HEALTHCHECK passes, and SIGTERM stops it with exit 0. Its token command mints
// a first token with plain node, on SQLite and on PostgreSQL.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcClient } from './support/grpc-client.js';
import { exitOf } from './support/process.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { argumentsOf, builtRelease, dockerfileStages, imageRecipe, startRelease } from './support/release.js';

const scratch = mkdtempSync(join(tmpdir(), 'platform-api-release-data-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

test('the Dockerfile builds with npm run build on Node 20 slim, and its image is the release folder alone', () => {
  const stages = dockerfileStages();
  assert.equal(
    stages.map((s) => s[0][1]),
    ['node:20-slim AS build', 'node:20-slim'],
  );
  assert.ok(argumentsOf(stages[0], 'RUN').includes('npm run build'), 'the build stage runs npm run build');
  const image = stages[1];
  assert.equal(argumentsOf(image, 'COPY'), ['--from=build /src/dist/release ./']);
  const { env, cmd } = imageRecipe();
  assert.is(env.HOST, '0.0.0.0');
  assert.is(cmd[0], 'node');
});

test('the release holds the server as JavaScript and its production dependencies, no TypeScript tooling', () => {
  const { dir, output } = builtRelease();
  assert.match(output, /^built platform-api \S+ into .* \(\d+ packages\)/);
  assert.ok(existsSync(join(dir, 'server/main.js')));
  assert.ok(existsSync(join(dir, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')));
  // Paths code resolves against its own file (generated/, the read worker) stay inside the release: nothing
  // reaches back into the repository it was built from.
  for (const file of readdirSync(join(dir, 'server')).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(join(dir, 'server', file), 'utf8');
    assert.not.ok(text.includes(process.cwd()), `${file} names the repository's path`);
    for (const [, url] of text.matchAll(/new URL\("([^"]+)", import\.meta\.url\)/g))
      assert.ok(resolve(dir, 'server', url).startsWith(`${dir}/`), `${file}: ${url} is outside the release`);
  }
  for (const tool of ['tsx', 'typescript', 'esbuild', 'ts-morph', 'eslint', 'uvu'])
    assert.not.ok(existsSync(join(dir, 'node_modules', tool)), `the release holds no ${tool}`);
});

test('the release starts as the image does, answers ping over HTTP and gRPC, and stops on SIGTERM', async () => {
  const { dir } = builtRelease();
  const dataDir = join(scratch, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  const env = { PORT: '0', DATA_DIR: dataDir };
  const server = await startRelease(dir, env);
  try {
    assert.match(server.output(), /listening on http:\/\/0\.0\.0\.0:/, 'HOST=0.0.0.0 as in the image');
    assert.equal(await (await fetch(`${server.url}/ping/v2/ping`)).json(), { response: 'pong' });
    assert.is((await fetch(`${server.url}/readyz`)).status, 200);
    assert.is((await fetch(`${server.url}/docs`)).status, 200, 'the docs page finds redoc in the release');

    const grpc = grpcClient(server.url, '', join(dir, 'generated'));
    try {
      const pong = await grpc.call('ping.v2.PingService', 'Ping', {});
      assert.equal([pong.code, pong.value], [0, { response: 'pong' }]);
    } finally {
      grpc.close();
    }

    // The image's HEALTHCHECK, run as docker runs it, with the port the release took.
    const { env: imageEnv, healthcheck } = imageRecipe();
    const port = new URL(server.url).port;
    const check = spawnSync(process.execPath, healthcheck.slice(1), {
      env: { PATH: '/usr/bin:/bin', ...imageEnv, ...env, PORT: port },
      encoding: 'utf8',
    });
    assert.is(check.status, 0, `HEALTHCHECK: ${check.stderr}`);

    server.child.kill('SIGTERM');
    assert.is(await exitOf(server.child), 0, server.output());
    assert.match(server.output(), /platform-api stopped/);
  } finally {
    server.child.kill('SIGKILL');
  }
});

/** The release's token command as a user of the image runs it: plain node in the release folder, the image's ENV. */
function releaseToken(dir: string, env: Record<string, string>): string {
  const { env: imageEnv } = imageRecipe();
  const r = spawnSync(process.execPath, ['server/token.js'], {
    cwd: dir,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir, ...imageEnv, ...env },
    encoding: 'utf8',
  });
  assert.is(r.status, 0, `node server/token.js: ${r.stderr}`);
  return r.stdout.trim();
}

async function ownerCan(url: string, token: string, organization: string): Promise<void> {
  const res = await fetch(`${url}/iam/v2/groups/${organization}`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(res.status, 200, `the minted token is accepted: ${await res.text()}`);
}

test('node server/token.js in the release mints a token the release accepts, on SQLite and PostgreSQL', async () => {
  const { dir } = builtRelease();
  const dataDir = join(scratch, 'token-data');
  mkdirSync(dataDir, { mode: 0o700 });
  const onSqlite = await startRelease(dir, { PORT: '0', DATA_DIR: dataDir });
  try {
    await ownerCan(onSqlite.url, releaseToken(dir, { DATA_DIR: dataDir }), readBootstrap(dataDir)!.organization);
  } finally {
    onSqlite.child.kill('SIGKILL');
  }
  // On PostgreSQL the command needs the database alone: a data directory of its own, never the server's.
  const DATABASE_URL = await newDatabase();
  const serverDir = join(scratch, 'pg-server-data');
  const onPostgres = await startRelease(dir, { PORT: '0', DATA_DIR: serverDir, DATABASE_URL });
  try {
    const minted = releaseToken(dir, { DATA_DIR: join(scratch, 'pg-token-data'), DATABASE_URL });
    await ownerCan(onPostgres.url, minted, readBootstrap(serverDir)!.organization);
  } finally {
    onPostgres.child.kill('SIGKILL');
    await stopOwnCluster();
  }
});

test.run();
