// npm run grpc: the gRPC command line over server reflection, against a real server on loopback: the services,
// a service's methods, a message as .proto text, a call with a token that writes what HTTP then reads, and an
// error shown with its code and details (exit 1).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
test.before(async () => {
  s = await startTestServer();
});
test.after(async () => s.stop());

const grpc = (...args: string[]) => runScript('scripts/grpc.ts', ['--address', new URL(s.url).host, ...args], {});
const repos = 'chainguard.platform.registry.v2.ReposService';

test('list names the services, and with a service its methods', async () => {
  const services = await grpc('list');
  assert.is(services.status, 0, services.stderr);
  const names = services.stdout.trim().split('\n');
  assert.ok(names.includes(repos), services.stdout);
  assert.ok(names.includes('chainguard.platform.iam.v2.GroupsService'), services.stdout);
  const methods = await grpc('list', repos);
  assert.is(methods.status, 0, methods.stderr);
  assert.ok(methods.stdout.split('\n').includes(`${repos}.CreateRepo`), methods.stdout);
});

test('describe shows a service and a message as .proto text', async () => {
  const service = await grpc('describe', repos);
  assert.match(
    service.stdout,
    `rpc CreateRepo(.chainguard.platform.registry.v2.CreateRepoRequest) returns (.chainguard.platform.registry.v2.Repo);`,
  );
  const message = await grpc('describe', 'chainguard.platform.registry.v2.CreateRepoRequest');
  assert.is(message.status, 0, message.stderr);
  assert.match(
    message.stdout,
    /^message chainguard\.platform\.registry\.v2\.CreateRepoRequest \{\n {2}string parent = 1;/,
  );
  const missing = await grpc('describe', 'no.such.Thing');
  assert.is(missing.status, 1);
  assert.match(missing.stderr, /^grpc: no\.such\.Thing: Symbol not found/);
});

test('call sends proto3 JSON with the bearer token and prints the answer as JSON', async () => {
  const org = await createOrg(s, 'grpc-cli');
  const made = await grpc(
    '--token',
    s.token,
    'call',
    `${repos}/CreateRepo`,
    JSON.stringify({ parent: org, repo: { name: 'by-cli' } }),
  );
  assert.is(made.status, 0, made.stderr);
  const repo = JSON.parse(made.stdout);
  assert.is(repo.name, 'by-cli');
  assert.ok(repo.createTime, 'timestamps as RFC 3339 text');
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body.name, 'by-cli');
});

test('an error shows its code, message and details and exits 1; a field the request lacks is refused', async () => {
  const refused = await grpc('call', `${repos}/ListRepos`, '{}');
  assert.is(refused.status, 1);
  assert.match(refused.stderr, /Code: UNAUTHENTICATED/);
  assert.match(refused.stderr, /"@type": "type\.googleapis\.com\/google\.rpc\.ErrorInfo"/);
  const unknown = await grpc('--token', s.token, 'call', `${repos}/ListRepos`, '{"colour":"red"}');
  assert.is(unknown.status, 1);
  assert.match(unknown.stderr, /^grpc: ListReposRequest has no field colour/);
});

test.run();
