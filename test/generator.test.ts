// The generator: deterministic output, clear spec errors, and a new resource served from YAML alone.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSpec } from '../generator/spec.js';
import { loadGenerated } from '../server/server.js';
import { sourceHashes } from '../scripts/source-hash.mjs';
import { startTestServer } from './support/server.js';
import { grpcClient } from './support/grpc-client.js';

// Generated code imports packages, so scratch output lives inside the project where node_modules resolves.
const scratchRoot = join(process.cwd(), '.tmp');
mkdirSync(scratchRoot, { recursive: true });
const scratch = mkdtempSync(join(scratchRoot, 'generator-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

function generate(spec: string, out: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'generator/main.ts', '--spec', spec, '--out', out], {
    encoding: 'utf8',
  });
}

function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out[relative(dir, join(d, e.name))] = readFileSync(join(d, e.name), 'utf8');
    }
  };
  walk(dir);
  return out;
}

test('two runs give byte-identical output, each file marked as generated', () => {
  const a = generate('spec', join(scratch, 'a'));
  const b = generate('spec', join(scratch, 'b'));
  assert.is(a.status, 0, a.stderr);
  assert.is(b.status, 0, b.stderr);
  const spec = loadSpec('spec');
  assert.match(
    a.stdout,
    new RegExp(
      `generated \\d+ files .* from ${spec.domains.length} domains, ${Object.keys(spec.resources).length} resources, \\d+ routes, \\d+ rpcs in \\d+ ms`,
    ),
  );
  const fa = files(join(scratch, 'a'));
  const fb = files(join(scratch, 'b'));
  assert.equal(Object.keys(fa).sort(), Object.keys(fb).sort());
  for (const name of Object.keys(fa)) {
    assert.ok(fa[name] === fb[name], `${name} differs between runs`);
    assert.match(fa[name].slice(0, 200), /Do not edit/, `${name} starts with a do-not-edit line`);
  }
  for (const expected of [
    'openapi.json',
    'model.ts',
    'entities.ts',
    'routes.ts',
    'types.ts',
    'validators/bodies.cjs',
    'validators/queries.cjs',
  ]) {
    assert.ok(expected in fa, `${expected} is generated`);
  }
  const { $comment: _, ...recorded } = JSON.parse(fa['.source-hash']);
  assert.equal(recorded, sourceHashes(), 'the record of its sources is what ensure-ready compares');
});

test('a wrong spec fails with the file, the path inside it and what is wrong, and generates nothing', () => {
  const spec = join(scratch, 'bad-spec');
  cpSync('spec', spec, { recursive: true });
  writeFileSync(
    join(spec, 'broken.yaml'),
    [
      'domain: broken',
      'title: Broken',
      'resources:',
      '  - type: Thing',
      '    collection: things',
      '    parent: nowhere',
      '    fields:',
      '      name: { type: strin }',
      '    operations: {}',
    ].join('\n'),
  );
  const out = join(scratch, 'bad-out');
  const r = generate(spec, out);
  assert.is(r.status, 1);
  assert.match(
    r.stderr,
    /broken\.yaml: \/resources\/0\/fields\/name\/type: must be equal to one of the allowed values/,
  );
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  assert.throws(() => readdirSync(out), 'nothing generated');

  writeFileSync(
    join(spec, 'broken.yaml'),
    'domain: broken\ntitle: Broken\nresources:\n  - type: Thing\n    collection: things\n    parent: nowhere\n    fields: {}\n    operations: {}\n',
  );
  const r2 = generate(spec, out);
  assert.is(r2.status, 1);
  assert.match(r2.stderr, /broken\.yaml: \/resources\/0\/parent: no resource has the collection "nowhere"/);

  writeFileSync(join(spec, 'broken.yaml'), 'domain: broken\n  title: [\n');
  const r3 = generate(spec, out);
  assert.is(r3.status, 1);
  assert.match(r3.stderr, /broken\.yaml: /);
});

test('the declarations of capabilities, filters, natural keys and create times are checked', () => {
  const spec = join(scratch, 'declarations-spec');
  cpSync('spec', spec, { recursive: true });
  const thing = (lines: string[]) =>
    writeFileSync(
      join(spec, 'things.yaml'),
      [
        'domain: things',
        'title: Things',
        'resources:',
        '  - type: Thing',
        '    collection: things',
        '    parent: groups',
        ...lines.map((l) => `    ${l}`),
        '    operations: {}',
      ].join('\n'),
    );
  thing(['fields:', '  kind: { type: enum, values: $roles }', 'filters:', '  - { param: kind, match: set }']);
  const schema = generate(spec, join(scratch, 'declarations-out'));
  assert.is(schema.status, 1);
  assert.match(schema.stderr, /things\.yaml: \/resources\/0\/fields\/kind\/values: must be "\$capabilities"/);
  assert.match(schema.stderr, /things\.yaml: \/resources\/0\/filters\/0: must have required property 'fields'/);
  thing([
    'naturalKey: [name, nope]',
    'fields:',
    '  name: { type: string }',
    '  seen: { type: string, outputOnly: true, setOnCreate: true }',
    '  kind: { type: enum, values: $capabilities }',
    'filters:',
    '  - { param: name, field: name, match: exact }',
    '  - { param: kind, match: set, fields: { A: kinds } }',
    'unservedFilters: [name]',
  ]);
  const model = generate(spec, join(scratch, 'declarations-out'));
  assert.is(model.status, 1);
  for (const problem of [
    /\/fields\/seen\/setOnCreate: only for an output-only timestamp/,
    /the list parameter "name" is declared twice/,
    /\/filters\/1: no field "kinds"/,
    /\/naturalKey: no field "nope"/,
    /\/naturalKey: must include parent/,
  ])
    assert.match(model.stderr, problem);
});

/** The spec copy's schemaVersion (api.yaml). */
function schemaVersionOf(spec: string): number {
  return Number(/^schemaVersion: (\d+)$/m.exec(readFileSync(join(spec, 'api.yaml'), 'utf8'))![1]);
}

/** Sets the spec copy's schemaVersion, as a spec author raises it with a declared change. */
function raiseSchemaVersion(spec: string, to: number): void {
  const api = readFileSync(join(spec, 'api.yaml'), 'utf8');
  writeFileSync(join(spec, 'api.yaml'), api.replace(/^schemaVersion: \d+$/m, `schemaVersion: ${to}`));
}

test('a capability stored roles may hold is removed only with the one they take, declared in access.yaml', () => {
  // Roles keep their capabilities as a list of enum values (framework/spec/iam.yaml, values: $capabilities): the
  // schema lock follows them, and the author of the vocabulary says where a removed one goes.
  const spec = join(scratch, 'removed-capability');
  cpSync('spec', spec, { recursive: true });
  const access = readFileSync(join(spec, 'access.yaml'), 'utf8');
  const without = access
    .replace(/^ {2}CAP_TENANT_CLUSTERS_CREATE: .*\n/m, '')
    .replace(/^ {6}- CAP_TENANT_CLUSTERS_CREATE\n/gm, '');
  writeFileSync(join(spec, 'access.yaml'), without);
  const version = schemaVersionOf(spec);
  const refused = generate(spec, join(scratch, 'removed-capability-out'));
  assert.is(refused.status, 1);
  assert.match(
    refused.stderr,
    /framework\/spec\/iam\.yaml: \/resources\/\d+\/fields\/capabilities: its value CAP_TENANT_CLUSTERS_CREATE is removed over stored rows: declare the value they take, in access\.yaml: renamedCapabilities: \{ CAP_TENANT_CLUSTERS_CREATE: <a capability> \}, and raise schemaVersion/,
  );
  writeFileSync(
    join(spec, 'access.yaml'),
    `renamedCapabilities: { CAP_TENANT_CLUSTERS_CREATE: CAP_TENANT_CLUSTERS_UPDATE }\n${without}`,
  );
  raiseSchemaVersion(spec, version + 1);
  const declared = generate(spec, join(scratch, 'removed-capability-out'));
  assert.is(declared.status, 0, declared.stderr);
  const lock = JSON.parse(readFileSync(join(spec, 'schema.lock.json'), 'utf8'));
  assert.equal(lock.tables.roles.fields.capabilities.changes.at(-1), {
    since: version + 1,
    kind: 'values',
    rows: 'copy',
    renamed: { CAP_TENANT_CLUSTERS_CREATE: 'CAP_TENANT_CLUSTERS_UPDATE' },
  });
});

test('an enum value inside a stored object is removed only with the one stored rows take, declared on that field', () => {
  // An identity provider's oidc is one JSON column: the lock follows the enum inside it by its dotted path.
  const spec = join(scratch, 'removed-nested-value');
  cpSync('spec', spec, { recursive: true });
  const iam = readFileSync(join(spec, 'iam.yaml'), 'utf8');
  const without = iam.replace(', CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID]', ']');
  assert.ok(without !== iam);
  writeFileSync(join(spec, 'iam.yaml'), without);
  const version = schemaVersionOf(spec);
  const refused = generate(spec, join(scratch, 'removed-nested-value-out'));
  assert.is(refused.status, 1);
  assert.match(
    refused.stderr,
    /iam\.yaml: \/resources\/\d+\/fields\/oidc\/fields\/correlationRule \(oidc\.correlationRule\): its value CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID is removed over stored rows: declare the value they take, renamedValues: \{ CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID: <one of CORRELATION_RULE_UNSPECIFIED, CORRELATION_RULE_SUB_EQUALS_EXTERNAL_ID> \} on this field, and raise schemaVersion in api\.yaml to \d+/,
  );
  const renamed = without.replace(
    'CORRELATION_RULE_SUB_EQUALS_EXTERNAL_ID]',
    'CORRELATION_RULE_SUB_EQUALS_EXTERNAL_ID]\n            renamedValues: { CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID: CORRELATION_RULE_UNSPECIFIED }',
  );
  writeFileSync(join(spec, 'iam.yaml'), renamed);
  raiseSchemaVersion(spec, version + 1);
  const declared = generate(spec, join(scratch, 'removed-nested-value-out'));
  assert.is(declared.status, 0, declared.stderr);
  const lock = JSON.parse(readFileSync(join(spec, 'schema.lock.json'), 'utf8'));
  const oidc = lock.tables.identityProviders.fields.oidc;
  assert.equal(oidc.nestedValues['oidc.correlationRule'], [
    'CORRELATION_RULE_UNSPECIFIED',
    'CORRELATION_RULE_SUB_EQUALS_EXTERNAL_ID',
  ]);
  assert.equal(oidc.changes.at(-1), {
    since: version + 1,
    kind: 'values',
    path: 'oidc.correlationRule',
    rows: 'copy',
    renamed: { CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID: 'CORRELATION_RULE_UNSPECIFIED' },
  });
});

test('a capability rename stored roles cannot take is named where it is declared, in access.yaml', () => {
  const spec = join(scratch, 'renamed-capability');
  cpSync('spec', spec, { recursive: true });
  const access = readFileSync(join(spec, 'access.yaml'), 'utf8');
  writeFileSync(
    join(spec, 'access.yaml'),
    `renamedCapabilities: { CAP_NEVER_STORED: CAP_TENANT_CLUSTERS_UPDATE }\n${access}`,
  );
  const refused = generate(spec, join(scratch, 'renamed-capability-out'));
  assert.is(refused.status, 1);
  assert.match(
    refused.stderr,
    /\/access\.yaml: \/renamedCapabilities\/CAP_NEVER_STORED: the stored field has no value CAP_NEVER_STORED/,
  );
  assert.not.match(refused.stderr, /renamedValues/);
});

test('a proto alias must be another package, not that of a domain, and end in its version', () => {
  const spec = join(scratch, 'alias-spec');
  cpSync('spec', spec, { recursive: true });
  const ping = join(spec, 'ping.yaml');
  const text = readFileSync(ping, 'utf8');
  writeFileSync(
    ping,
    text.replace(
      /^proto: .*$/m,
      'proto: { package: chainguard.platform.ping.v2, aliases: [chainguard.platform.ping] }',
    ),
  );
  const unversioned = generate(spec, join(scratch, 'alias-out'));
  assert.is(unversioned.status, 1);
  assert.match(unversioned.stderr, /ping\.yaml: \/proto\/aliases: chainguard\.platform\.ping must be another package/);
  writeFileSync(
    ping,
    text.replace(
      /^proto: .*$/m,
      'proto: { package: chainguard.platform.ping.v2, aliases: [chainguard.platform.iam.v2] }',
    ),
  );
  const taken = generate(spec, join(scratch, 'alias-out'));
  assert.is(taken.status, 1);
  assert.match(taken.stderr, /chainguard\.platform\.iam\.v2 is the package of a domain already/);
});

test('mistakes that would break the server later fail at generate, each named by its file and path', () => {
  const spec = join(scratch, 'mistakes-spec');
  cpSync('spec', spec, { recursive: true });
  const catalog = join(spec, 'catalog.yaml');
  writeFileSync(
    catalog,
    [
      'domain: catalog',
      'title: Catalog',
      'proto: { package: example.catalog.v1 }',
      'capabilities:',
      // 1: the number of CAP_IAM_GROUPS_CREATE; 2: granted to a role that does not exist
      '  CAP_PRODUCTS_LIST: { v1: products.list, proto: 101, roles: [viewer] }',
      '  CAP_PRODUCTS_CREATE: { v1: products.create, proto: 90100, roles: [editr] }',
      'resources:',
      // 3: a collection another file declares
      '  - { type: Repo, collection: repos, parent: groups, fields: { name: { type: string } }, operations: {} }',
      '  - type: Product',
      '    collection: products',
      '    parent: groups',
      '    fields:',
      // 4: one column and proto name for two fields; 5: a default outside the enum; 6: an example of another type
      '      sizeName: { type: string }',
      '      size_name: { type: string }',
      '      colour: { type: enum, values: [COLOUR_UNSPECIFIED, RED], default: PURPLE }',
      '      stock: { type: int64, example: many }',
      // 7: a column and wire name the server keeps for itself
      '      parent_uid: { type: string }',
      '      secret: { type: string, inputOnly: true, outputOnly: true }',
      // 12: a presented field with a stored field's wire name
      '    presenter: products',
      '    presents: { stock: { type: string } }',
      // 8: a substring of a number, a range over an enum; 13: a filter on a field never returned
      '    filters:',
      '      - { param: stockText, field: stock, match: contains }',
      '      - { param: minColour, field: colour, match: atLeast }',
      '      - { param: secret, field: secret, match: exact }',
      // 14: one parameter on the wire for two, a parameter every list has
      '    unservedFilters: [stock_text, pageSize]',
      // 9: a v1 name another field has
      '    v1: { collection: products, fields: { stock: colour } }',
      // 10: a capability nobody declares
      '    operations: { list: { capability: CAP_PRODUCTS_LIST }, get: { capability: CAP_PRODUCTS_GIT } }',
    ].join('\n'),
  );
  // 11: an enum value given twice (its own file: a file that fails the schema is not read further)
  const shades = join(spec, 'shades.yaml');
  writeFileSync(
    shades,
    [
      'domain: shades',
      'title: Shades',
      'resources:',
      '  - type: Shade',
      '    collection: shades',
      '    fields: { tone: { type: enum, values: [TONE_UNSPECIFIED, DARK, DARK] } }',
      '    operations: {}',
    ].join('\n'),
  );
  const r = generate(spec, join(scratch, 'mistakes-out'));
  assert.is(r.status, 1);
  const at = `${catalog}: `;
  for (const problem of [
    `${at}/capabilities/CAP_PRODUCTS_LIST/proto: 101 is already the number of CAP_IAM_GROUPS_CREATE (${join(spec, 'access.yaml')}: /capabilities/CAP_IAM_GROUPS_CREATE)`,
    `${at}/capabilities/CAP_PRODUCTS_CREATE/roles/0: no built-in role "editr" (access.yaml declares owner,`,
    `${join(spec, 'registry.yaml')}: /resources/0/collection: "repos" is also declared in ${at}/resources/0`,
    `${at}/resources/1/fields/size_name: its column and proto name size_name are also those of sizeName`,
    `${at}/resources/1/fields/colour/default: "PURPLE" is not one of COLOUR_UNSPECIFIED, RED`,
    `${at}/resources/1/fields/stock/example: "many" is not a whole number`,
    `${at}/resources/1/fields/parent_uid: its column and wire name parent_uid are the server's own (parentUid)`,
    `${at}/resources/1/filters/0/match: contains on "stock" (int64): contains looks for text in a string field`,
    `${at}/resources/1/filters/1/match: atLeast on "colour" (enum): a range needs an ordered type`,
    `${at}/resources/1/v1/fields/stock: the v1 name colour is also colour's`,
    `${at}/resources/1/operations/get: unknown capability CAP_PRODUCTS_GIT`,
    `${at}/resources/1/presents/stock: its wire name stock is also the field stock's`,
    `${at}/resources/1/filters/2/field: "secret" is never returned: a filter on it would tell its values`,
    `${at}/resources/1/unservedFilters/0: "stock_text" and "stockText" are one parameter on the wire (stock_text)`,
    `${at}/resources/1/unservedFilters/1: "pageSize" is a parameter of every list (page_size, page_token, order_by, skip, uidp.*)`,
    `${shades}: /resources/0/fields/tone/values: must NOT have duplicate items`,
  ])
    assert.ok(r.stderr.includes(problem), `expected:\n${problem}\nin:\n${r.stderr}`);
});

test('mistakes in the gRPC surface fail at generate, named by the file and path that make them', () => {
  const spec = join(scratch, 'surface-spec');
  cpSync('spec', spec, { recursive: true });
  const paints = join(spec, 'paints.yaml');
  writeFileSync(
    paints,
    [
      'domain: paints',
      'title: Paints',
      'resources:',
      '  - type: Paint',
      '    collection: paints',
      '    parent: groups',
      '    fields:',
      // two enums of one package, one value name: protoc refuses the file
      '      tint: { type: enum, values: [TINT_UNSPECIFIED, RED], proto: { type: Tint } }',
      '      shade: { type: enum, values: [SHADE_UNSPECIFIED, RED], proto: { type: Shade } }',
      // one enum name for two sets of values
      '      finish: { type: enum, values: [FINISH_UNSPECIFIED, MATT], proto: { type: Tint } }',
      // a first value that is not the unset one
      '      gloss: { type: enum, values: [HIGH, LOW] }',
      '    operations: { get: { capability: CAP_REPO_LIST } }',
    ].join('\n'),
  );
  const r = generate(spec, join(scratch, 'surface-out'));
  assert.is(r.status, 1, r.stdout);
  const at = `${paints}: /resources/0/fields`;
  for (const problem of [
    `${at}/shade/values: the value RED of platform.paints.v2.Shade is also one of platform.paints.v2.Tint, in the same scope platform.paints.v2`,
    `${at}/finish/values: proto enum platform.paints.v2.Tint is declared twice, differently`,
    `${at}/gloss/values: the first value of platform.paints.v2.Paint.Gloss (0, what an unset field reads as) must be <NAME>_UNSPECIFIED, not HIGH`,
  ])
    assert.ok(r.stderr.includes(problem), `expected:\n${problem}\nin:\n${r.stderr}`);
});

test('v1 endpoints: a prefix needs a version, lists names a collection, listQuery needs lists and takes no query', () => {
  const spec = join(scratch, 'v1-endpoints-spec');
  cpSync('spec', spec, { recursive: true });
  const endpoint = (name: string, lines: string[]) => [
    `  - name: ${name}`,
    '    method: GET',
    `    path: ${name}`,
    '    capability: authenticated',
    '    response: {}',
    ...lines.map((l) => `    ${l}`),
  ];
  writeFileSync(
    join(spec, 'things.yaml'),
    [
      'domain: things',
      'title: Things',
      'resources: []',
      'endpoints:',
      ...endpoint('a', ['prefix: auth']),
      ...endpoint('b', ['version: v2']),
      ...endpoint('c', ['listQuery: true']),
      ...endpoint('d', ['lists: tags', 'listQuery: true', 'query: {}']),
    ].join('\n'),
  );
  const schema = generate(spec, join(scratch, 'v1-endpoints-out'));
  assert.is(schema.status, 1);
  assert.match(schema.stderr, /\/endpoints\/0: must have property version when property prefix is present/);
  assert.match(schema.stderr, /\/endpoints\/1\/version: must be equal to one of the allowed values \(v1\)/);
  assert.match(schema.stderr, /\/endpoints\/2: must have property lists when property listQuery is present/);
  assert.match(schema.stderr, /\/endpoints\/3: must NOT be valid/);
  writeFileSync(
    join(spec, 'things.yaml'),
    ['domain: things', 'title: Things', 'resources: []', 'endpoints:', ...endpoint('e', ['lists: nope'])].join('\n'),
  );
  const model = generate(spec, join(scratch, 'v1-endpoints-out'));
  assert.is(model.status, 1);
  assert.match(model.stderr, /things\.yaml: \/endpoints\/0\/lists: no resource has the collection "nope"/);
});

test('a resource added in YAML alone is generated and served', async () => {
  const spec = join(scratch, 'fixture-spec');
  cpSync('spec', spec, { recursive: true });
  cpSync('test/fixtures/widgets.yaml', join(spec, 'gadgets.yaml'));
  const out = join(scratch, 'fixture-generated');
  const r = generate(spec, out);
  assert.is(r.status, 0, r.stderr);
  const server = await startTestServer(await loadGenerated(out));
  try {
    const { body: org } = await server.call('POST', '/iam/v2/groups', { name: 'org' });
    const created = await server.call('POST', `/gadgets/v2/widgets/${org.uid}`, {
      name: 'sprocket',
      size: 12,
      colour: 'RED',
      labels: { a: 'b' },
    });
    assert.is(created.status, 200, JSON.stringify(created.body));
    assert.is(created.body.size, '12', 'int64 is rendered as a string');
    const listed = await server.call('GET', `/gadgets/v2/widgets?uidp.descendants_of=${org.uid}&colour=RED`);
    assert.equal(
      listed.body.widgets.map((w: any) => w.name),
      ['sprocket'],
    );
    assert.is(listed.body.totalCount, '1');
    const bad = await server.call('POST', `/gadgets/v2/widgets/${org.uid}`, { name: 'Nope', colour: 'BLUE' });
    assert.is(bad.status, 400);
    assert.equal(bad.body.details[1].fieldViolations.map((v: any) => v.field).sort(), ['colour', 'name']);
    const blocked = await server.call('DELETE', `/iam/v2/groups/${org.uid}`);
    assert.is(blocked.status, 400, 'the new child kind blocks deleting its group');
    assert.match(blocked.body.message, /child widgets/);
    const openapi = await server.call('GET', '/openapi.json');
    assert.ok(openapi.body.paths['/gadgets/v2/widgets'].get);
    const grpc = grpcClient(server.url, server.token, out, 'example');
    const reply = await grpc.call('gadgets.v1.WidgetsService', 'ListWidgets', {
      uidp: { descendants_of: org.uid },
      colour: 'RED',
    });
    grpc.close();
    assert.is(reply.code, 0, reply.message);
    assert.equal(
      reply.value.widgets.map((w: any) => [w.name, w.size, w.labels]),
      [['sprocket', '12', { a: 'b' }]],
    );
    assert.is(reply.value.total_count, '1');
  } finally {
    await server.stop();
  }
});

test('a resource added in YAML alone gets its record and resource types', () => {
  const spec = join(scratch, 'types-spec');
  cpSync('spec', spec, { recursive: true });
  cpSync('test/fixtures/widgets.yaml', join(spec, 'gadgets.yaml'));
  const out = join(scratch, 'types-generated');
  const r = generate(spec, out);
  assert.is(r.status, 0, r.stderr);
  const types = readFileSync(join(out, 'types.ts'), 'utf8');
  // int64 as its exact text; unset fields are null columns once stored and left out of responses.
  assert.ok(
    types.includes(
      [
        'export type WidgetRecord = {',
        '  uid: string;',
        '  parentUid: string | null;',
        '  createTime: string;',
        '  updateTime: string;',
        '  name: string;',
        '  size?: string | null;',
        '  colour?: "COLOUR_UNSPECIFIED" | "RED" | "GREEN" | null;',
        '  labels?: Record<string, string> | null;',
        '};',
      ].join('\n'),
    ),
    types,
  );
  assert.ok(
    types.includes(
      [
        'export type WidgetResource = {',
        '  uid: string;',
        '  name: string;',
        '  size?: string;',
        '  colour?: "COLOUR_UNSPECIFIED" | "RED" | "GREEN";',
        '  labels?: Record<string, string>;',
        '  createTime: string;',
        '  updateTime: string;',
        '};',
      ].join('\n'),
    ),
    types,
  );
  assert.match(types, /interface RecordTypes \{[^}]*\n {4}widgets: WidgetRecord;\n/);
});

test('the generated handler interfaces are what the hand-written handlers must implement', () => {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.'], {
    encoding: 'utf8',
  });
  assert.is(tsc.status, 0, tsc.stdout);
});

test.run();
