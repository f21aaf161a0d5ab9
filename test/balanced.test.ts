// The third pass's witness (TEST_TOPOLOGY=haproxy, test/support/balanced.ts): requests through the test server's
// URL, on one kept-alive connection, reach all three instances in turn, HTTP and gRPC, as each instance's own
// /metrics counts them. Skipped in the other passes, where the test server is one instance.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { balanced } from './support/balanced.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type TestServer } from './support/server.js';

const maybe = balanced() ? test : test.skip;
let s: TestServer;

test.before(async () => {
  if (balanced()) s = await startTestServer();
});
test.after(async () => {
  await s?.stop();
});

/** The sum of an instance's series of name whose labels include label. */
async function counted(instance: string, name: string, label: string): Promise<number> {
  const text = await (await fetch(`${instance}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(label))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
}

maybe('every request through HAProxy goes to the next of the three instances, HTTP and gRPC', async () => {
  assert.is(s.instances.length, 3);
  const http = (i: string) => counted(i, 'http_requests_total', 'route="/ping/v2/ping"');
  const rpc = (i: string) => counted(i, 'grpc_server_handled_total', 'PingService/Ping"');
  const before = await Promise.all(s.instances.map(async (i) => [await http(i), await rpc(i)]));
  // fetch keeps its connection to HAProxy open: the balance is per request, not per connection.
  for (let i = 0; i < 30; i++) assert.is((await s.call('GET', '/ping/v2/ping')).status, 200);
  const grpc = grpcClient(s.url, s.token);
  try {
    for (let i = 0; i < 9; i++) assert.is((await grpc.call('ping.v2.PingService', 'Ping', {})).code, 0);
  } finally {
    grpc.close();
  }
  const after = await Promise.all(s.instances.map(async (i) => [await http(i), await rpc(i)]));
  const grew = after.map(([h, r], k) => [h - before[k][0], r - before[k][1]]);
  console.log(`[balanced] ping requests (HTTP, gRPC) answered by each instance: ${JSON.stringify(grew)}`);
  assert.equal(grew, [
    [10, 3],
    [10, 3],
    [10, 3],
  ]);
});

test.run();
