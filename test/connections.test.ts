// Connections that would stay forever: h2c (gRPC) ones after the HTTP port hands them over. An rpc whose
// announced message never comes, a peer that went away, an idle connection, too many connections, a shutdown
// with rpcs in flight: each is cut, and the process keeps its descriptors.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect as connectHttp2, constants } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcClient } from './support/grpc-client.js';
import { resetStreams, startStalledRpc } from './support/h2-attack.js';
import { exitOf, spawnServer } from './support/process.js';
import { startTestServer } from './support/server.js';

const rpcPath = '/chainguard.platform.iam.v2.GroupsService/ListGroups';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (up to `ms`) for `done` to hold; answers whether it did. */
async function eventually(done: () => boolean, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) if (done()) return true;
  return done();
}

const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

test('300 rpcs announcing a message never sent, their clients gone: a 256-descriptor server keeps answering and stops on SIGTERM', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-conn-'));
  const server = await spawnServer({ PORT: '0', DATA_DIR: dataDir, SHUTDOWN_GRACE: '2' }, 256);
  const pid = server.child.pid!;
  const descriptors = () => readdirSync(`/proc/${pid}/fd`).length;
  try {
    const { hostname, port } = new URL(server.url);
    // The first gRPC connection sets the gRPC server up (and opens what it needs): counted from after it.
    const client = grpcClient(server.url, '');
    assert.ok([0, 7, 16].includes((await client.call('iam.v2.GroupsService', 'ListGroups', {})).code));
    client.close();
    await eventually(() => false, 300);
    const before = descriptors();
    for (let i = 0; i < 300; i++) (await startStalledRpc(hostname, Number(port), rpcPath)).destroy();
    assert.ok(await eventually(() => descriptors() <= before + 5, 10_000), `${descriptors()} open, ${before} before`);
    assert.is((await fetch(`${server.url}/healthz`)).status, 200);
    const again = grpcClient(server.url, '');
    const reply = await again.call('iam.v2.GroupsService', 'ListGroups', {});
    again.close();
    assert.ok(reply.code !== 14 && reply.code !== 4, `${reply.code} ${reply.message}`);

    // Rpcs still waiting for their messages, their clients still there: SIGTERM cuts them after the grace.
    const stalled = await Promise.all(
      Array.from({ length: 20 }, () => startStalledRpc(hostname, Number(port), rpcPath)),
    );
    const exit = exitOf(server.child);
    server.child.kill('SIGTERM');
    const code = await Promise.race([exit, sleep(15_000).then(() => 'still running')]);
    assert.is(code, 0, server.output());
    for (const socket of stalled) socket.destroy();
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('GRPC_IDLE_TIMEOUT: an h2c connection without an rpc is closed', async () => {
  const s = await startTestServer(undefined, { GRPC_IDLE_TIMEOUT: '1' });
  try {
    const { hostname, port } = new URL(s.url);
    const idle = connect(Number(port), hostname);
    idle.on('error', () => {});
    idle.resume();
    idle.write(
      Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]),
    );
    let gone = false;
    void closed(idle).then(() => (gone = true));
    assert.ok(await eventually(() => gone, 10_000), 'the idle connection is still open');
  } finally {
    await s.stop();
  }
});

test('REQUEST_TIMEOUT: an rpc whose announced message never comes, its client still there, is answered INVALID_ARGUMENT', async () => {
  const s = await startTestServer(undefined, { REQUEST_TIMEOUT: '1', HEADERS_TIMEOUT: '1' });
  const session = connectHttp2(s.url);
  session.on('error', () => {});
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': rpcPath,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => {});
    stream.write(Buffer.from([0, 0, 0, 0x03, 0xe8, 1, 2, 3]));
    // No message: the status comes as the answer's only headers (trailers-only), or as trailers.
    const trailers = await Promise.race([
      new Promise<Record<string, unknown>>((resolve) => {
        stream.once('response', (headers) => headers['grpc-status'] !== undefined && resolve(headers));
        stream.once('trailers', resolve);
      }),
      sleep(10_000).then((): Record<string, unknown> => ({ 'grpc-status': 'none within 10 s' })),
    ]);
    assert.is(trailers['grpc-status'], '3');
    assert.match(decodeURIComponent(String(trailers['grpc-message'])), /the request did not arrive in time/);
    assert.ok(trailers['grpc-status-details-bin'], 'with its google.rpc.Status');
  } finally {
    session.destroy();
    await s.stop();
  }
});

test('MAX_CONNECTIONS counts h2c connections with HTTP ones: past it, new connections are closed', async () => {
  const s = await startTestServer(undefined, { MAX_CONNECTIONS: '5' });
  try {
    const { hostname, port } = new URL(s.url);
    const held = await Promise.all(Array.from({ length: 5 }, () => startStalledRpc(hostname, Number(port), rpcPath)));
    const refused = await fetch(`${s.url}/healthz`).then(
      (r) => r.status,
      () => 'closed',
    );
    assert.is(refused, 'closed');
    await Promise.all(held.map((socket) => (socket.destroy(), closed(socket))));
    // The server sees them go a moment later: a new connection is served again.
    let status: number | string = 'closed';
    for (let i = 0; i < 50 && status !== 200; i++, await sleep(100))
      status = await fetch(`${s.url}/healthz`).then(
        (r) => r.status,
        () => 'closed',
      );
    assert.is(status, 200);
  } finally {
    await s.stop();
  }
});

test('GRPC_MAX_STREAMS: rpcs past the cap on one connection are refused (REFUSED_STREAM)', async () => {
  const s = await startTestServer(undefined, { GRPC_MAX_STREAMS: '3' });
  const { hostname, port } = new URL(s.url);
  const socket = await startStalledRpc(hostname, Number(port), rpcPath, 5);
  try {
    const resets = resetStreams(socket);
    assert.ok(await eventually(() => resets.size >= 2, 5000), JSON.stringify([...resets]));
    // streams 1, 3 and 5 wait for their messages; 7 and 9 are refused
    assert.equal([...resets].sort(), [
      [7, constants.NGHTTP2_REFUSED_STREAM],
      [9, constants.NGHTTP2_REFUSED_STREAM],
    ]);
  } finally {
    socket.destroy();
    await s.stop();
  }
});

test.run();
