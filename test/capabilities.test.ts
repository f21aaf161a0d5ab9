// The capabilities a role may hold are the published contract's Capability enum, written once in the spec;
// what is ours alone is marked as an extension.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../generator/spec.js';
import { startTestServer, type TestServer } from './support/server.js';

// The published contract's facts, kept in test/facts/ (scripts/tooling/reference-facts.mjs).
const contract = JSON.parse(readFileSync('test/facts/api-v2.json', 'utf8'));
/** UNKNOWN is the enum's zero value, not a capability. */
const published = new Set<string>(
  contract.components.schemas['chainguard.capabilities.Capability'].enum.filter((c: string) => c !== 'UNKNOWN'),
);
const model = loadSpec('spec');
const grantable = model.resources.roles.fields.capabilities.values!;

let s: TestServer;

test.before(async () => {
  s = await startTestServer();
});
test.after(async () => s.stop());

test('every capability a role may hold, built-in or custom, is in the published enum or marked as our extension', () => {
  const held = new Set([...grantable, ...model.roles.flatMap((r) => r.capabilities)]);
  for (const c of held)
    assert.ok(
      published.has(c) || model.capabilities[c]?.extension,
      `${c} is neither in the published Capability enum nor marked extension: true`,
    );
  for (const [c, m] of Object.entries(model.capabilities)) {
    if (m.extension) assert.not.ok(published.has(c), `${c} is in the published enum: it is not an extension`);
  }
  assert.equal(
    grantable.filter((c) => !model.capabilities[c].extension).sort(),
    [...published].sort(),
    'a role may hold every published capability',
  );
});

test('the vocabulary is declared once: roles.capabilities takes it from access.yaml', () => {
  assert.match(readFileSync('framework/spec/iam.yaml', 'utf8'), /values: \$capabilities/);
  assert.not.match(
    readFileSync('framework/spec/iam.yaml', 'utf8'),
    /CAP_REPO_CREATE/,
    'no copy of the capability list',
  );
  assert.equal(grantable, Object.keys(model.capabilities));
});

test('over HTTP: a role is refused a capability outside the vocabulary and given one of ours that is marked', async () => {
  const org = s.bootstrap.organization;
  const openapi = (await s.call('GET', '/openapi.json')).body;
  assert.equal(openapi.components.schemas.Role.properties.capabilities.items.enum, grantable);
  for (const wrong of ['CAP_NOT_A_CAPABILITY', 'UNKNOWN', 'repo.list']) {
    const r = await s.call('POST', `/iam/v2/roles/${org}`, {
      name: `with ${wrong}`,
      capabilities: ['CAP_REPO_LIST', wrong],
    });
    assert.is(r.status, 400, `${wrong}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.message, /capabilities/);
  }
  const extension = Object.keys(model.capabilities).find((c) => model.capabilities[c].extension)!;
  const ok = await s.call('POST', `/iam/v2/roles/${org}`, { name: 'with an extension', capabilities: [extension] });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.capabilities, [extension]);
});

test.run();
