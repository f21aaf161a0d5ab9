// gRPC by default (issue 28): a domain whose spec writes no proto numbers at all is on gRPC. The generator gives it a
// package, services, field, list request, enum value and capability numbers, and records them in spec/proto.lock.json;
// a removed field's number and name become reserved and a new field gets a new number; a number the spec pins over
// a removed field's is refused, and so is a message with nothing on the wire. A real server serves the catalog's
// create, get, list, update and delete over gRPC, through the real generate.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { protoLockFile } from '../generator/proto-lock.js';
import { loadGenerated } from '../server/server.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer } from './support/server.js';

// Generated code imports packages, so scratch output lives inside the project where node_modules resolves.
mkdirSync(join(process.cwd(), '.tmp'), { recursive: true });
const scratch = mkdtempSync(join(process.cwd(), '.tmp', 'proto-numbers-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));
const spec = join(scratch, 'spec');
cpSync('spec', spec, { recursive: true });

/** The catalog domain of issue 28's journey, with not one proto declaration or capability number. */
function writeCatalog(
  productFields: string[],
  statusValues = 'STATUS_UNSPECIFIED, ACTIVE, RETIRED',
  statusMore = '',
): void {
  writeFileSync(
    join(spec, 'catalog.yaml'),
    [
      'domain: catalog',
      'title: Catalog',
      'capabilities:',
      '  CAP_PRODUCTS_LIST: { v1: products.list, roles: [owner, editor, viewer] }',
      '  CAP_PRODUCTS_CREATE: { v1: products.create, roles: [owner, editor] }',
      '  CAP_PRODUCTS_UPDATE: { v1: products.update, roles: [owner, editor] }',
      '  CAP_PRODUCTS_DELETE: { v1: products.delete, roles: [owner] }',
      'resources:',
      '  - type: Product',
      '    collection: products',
      '    parent: groups',
      '    onParentDelete: cascade',
      '    fields:',
      '      name: { type: string, required: true, pattern: "^[a-z]+$" }',
      ...productFields.map((f) => `      ${f}`),
      `      status: { type: enum, values: [${statusValues}]${statusMore} }`,
      '      size: { type: object, fields: { width: { type: int32 }, height: { type: int32 } } }',
      '      labels: { type: map, mapValue: { type: string } }',
      '    filters:',
      '      - { param: status, field: status, match: exact }',
      '    orderBy: { name: name }',
      '    operations:',
      '      list: { capability: CAP_PRODUCTS_LIST }',
      '      get: { capability: CAP_PRODUCTS_LIST }',
      '      create: { capability: CAP_PRODUCTS_CREATE }',
      '      update: { capability: CAP_PRODUCTS_UPDATE }',
      '      delete: { capability: CAP_PRODUCTS_DELETE }',
      '  - type: Review',
      '    collection: reviews',
      '    parent: products',
      '    onParentDelete: cascade',
      '    fields:',
      '      stars: { type: int32, required: true }',
      '      text: { type: string }',
      '    operations:',
      '      list: { capability: CAP_PRODUCTS_LIST }',
      '      get: { capability: CAP_PRODUCTS_LIST }',
      '      create: { capability: CAP_PRODUCTS_CREATE }',
    ].join('\n'),
  );
}

function generate(specDir: string, out: string) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'generator/main.ts', '--spec', specDir, '--out', out], {
    encoding: 'utf8',
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }))
      if (e.isDirectory()) walk(join(d, e.name));
      else out[relative(dir, join(d, e.name))] = readFileSync(join(d, e.name), 'utf8');
  };
  walk(dir);
  return out;
}

/** The catalog's .proto: its package is <service>.<domain>.<version> from api.yaml. */
const catalogProto = (out: string) => readFileSync(join(out, 'proto/platform/catalog/v2/catalog.proto'), 'utf8');
/** One message or enum of a .proto, its lines trimmed. */
function block(proto: string, kind: 'message' | 'enum', name: string): string[] {
  const lines = proto.split('\n');
  const start = lines.findIndex((l) => l.trim() === `${kind} ${name} {`);
  assert.ok(start >= 0, `${kind} ${name} in:\n${proto}`);
  const indent = lines[start].length - lines[start].trimStart().length;
  const end = lines.findIndex((l, i) => i > start && l === `${' '.repeat(indent)}}`);
  return lines.slice(start + 1, end).map((l) => l.trim());
}

const first = join(scratch, 'first');

test('a domain with no numbers generates every field, list request and capability, numbered and recorded', () => {
  writeCatalog(['sku: { type: string }', 'price: { type: int64 }']);
  const r = generate(spec, first);
  assert.is(r.status, 0, r.out);
  assert.match(r.out, `recorded new gRPC numbers in ${join(spec, protoLockFile)}: commit it with the spec`);
  const proto = catalogProto(first);
  assert.match(proto, /^package platform\.catalog\.v2;$/m);
  const product = block(proto, 'message', 'Product');
  for (const line of [
    'string uid = 1;',
    'string name = 2;',
    'string sku = 3;',
    'int64 price = 4;',
    '.platform.catalog.v2.Product.Status status = 5;',
    '.platform.catalog.v2.Product.Size size = 6;',
    'map<string, string> labels = 7;',
    '.google.protobuf.Timestamp create_time = 8;',
    '.google.protobuf.Timestamp update_time = 9;',
  ])
    assert.ok(product.includes(line), `${line} in Product:\n${product.join('\n')}`);
  assert.equal(block(proto, 'enum', 'Status'), ['STATUS_UNSPECIFIED = 0;', 'ACTIVE = 1;', 'RETIRED = 2;']);
  assert.equal(block(proto, 'message', 'Size'), ['int32 width = 1;', 'int32 height = 2;']);
  // Every list parameter, the filter typed as its field's enum.
  const list = block(proto, 'message', 'ListProductsRequest');
  assert.ok(list.includes('.platform.catalog.v2.Product.Status status = 6;'), list.join('\n'));
  assert.is(list.length, 6);
  assert.match(proto, /service ProductsService \{\n {2}rpc ListProducts/);
  assert.match(proto, /service ReviewsService \{/);
  // New capabilities get numbers no other capability has.
  const capabilities = readFileSync(join(first, 'proto/chainguard/capabilities/capabilities.proto'), 'utf8');
  const numbers = [...capabilities.matchAll(/ = (\d+);/g)].map((m) => Number(m[1]));
  assert.is(new Set(numbers).size, numbers.length, 'each capability its own number');
  for (const cap of ['CAP_PRODUCTS_LIST', 'CAP_PRODUCTS_CREATE', 'CAP_PRODUCTS_UPDATE', 'CAP_PRODUCTS_DELETE'])
    assert.match(capabilities, new RegExp(`\\b${cap} = \\d+;`));
  const lock = JSON.parse(readFileSync(join(spec, protoLockFile), 'utf8'));
  assert.equal(lock.messages['platform.catalog.v2.Product'].numbers.sku, 3);
  assert.is(lock.packages.catalog, 'platform.catalog.v2');
});

test('a second run, and a run on a fresh copy with the committed lock, give byte-identical files', () => {
  const lock = readFileSync(join(spec, protoLockFile), 'utf8');
  const again = generate(spec, join(scratch, 'again'));
  assert.is(again.status, 0, again.out);
  assert.not.match(again.out, /recorded new gRPC numbers/);
  assert.is(readFileSync(join(spec, protoLockFile), 'utf8'), lock, 'nothing new to record');
  const clone = join(scratch, 'clone');
  cpSync(spec, clone, { recursive: true });
  assert.is(generate(clone, join(scratch, 'clone-out')).status, 0);
  const [a, b, c] = [first, join(scratch, 'again'), join(scratch, 'clone-out')].map(files);
  for (const name of Object.keys(a).filter((n) => n.startsWith('proto/') || n === 'grpc.ts')) {
    assert.ok(a[name] === b[name], `${name} differs between runs`);
    assert.ok(a[name] === c[name], `${name} differs on a fresh copy`);
  }
});

test('a real server serves the catalog over gRPC: create, get, list, update and delete', async () => {
  const server = await startTestServer(await loadGenerated(first));
  const grpc = grpcClient(server.url, server.token, first, 'platform');
  try {
    const { body: org } = await server.call('POST', '/iam/v2/groups', { name: 'org' });
    const P = 'catalog.v2.ProductsService';
    const ok = async (service: string, rpc: string, request: object) => {
      const reply = await grpc.call(service, rpc, request);
      assert.is(reply.code, 0, `${rpc}: ${reply.message}`);
      return reply.value;
    };
    const product = {
      name: 'lamp',
      sku: 'SKU-1',
      price: '300',
      status: 'ACTIVE',
      size: { width: 2, height: 3 },
      labels: { a: 'b' },
    };
    const created = await ok(P, 'CreateProduct', { parent: org.uid, product });
    assert.equal(
      { ...created, uid: undefined, create_time: undefined, update_time: undefined },
      {
        ...product,
        uid: undefined,
        create_time: undefined,
        update_time: undefined,
      },
    );
    const http = await server.call('GET', `/catalog/v2/products/${created.uid}`);
    assert.is(http.body.sku, 'SKU-1', 'what gRPC stored, HTTP reads');
    assert.is((await ok(P, 'GetProduct', { uid: created.uid })).name, 'lamp');
    await ok(P, 'CreateProduct', { parent: org.uid, product: { name: 'desk', status: 'RETIRED' } });
    const listed = await ok(P, 'ListProducts', { uidp: { descendants_of: org.uid }, status: 'ACTIVE' });
    assert.equal(
      listed.products.map((p: any) => p.name),
      ['lamp'],
    );
    const updated = await ok(P, 'UpdateProduct', {
      product: { uid: created.uid, price: '450', name: 'ignored' },
      update_mask: { paths: ['price'] },
    });
    assert.equal([updated.name, updated.price], ['lamp', '450']);
    const R = 'catalog.v2.ReviewsService';
    const review = await ok(R, 'CreateReview', { parent: created.uid, review: { stars: 4, text: 'bright' } });
    assert.is((await ok(R, 'GetReview', { uid: review.uid })).stars, 4);
    assert.equal(await ok(P, 'DeleteProduct', { uid: created.uid }), {});
    const gone = await grpc.call(P, 'GetProduct', { uid: created.uid });
    assert.is(gone.code, 5, 'NOT_FOUND once deleted');
  } finally {
    grpc.close();
    await server.stop();
  }
});

test('a removed field keeps its number reserved, a new field gets a new one; an enum value alike', () => {
  // A value stored rows may hold goes only with the value they take instead, at a new schemaVersion.
  writeCatalog(
    ['price: { type: int64 }', 'colour: { type: string }'],
    'STATUS_UNSPECIFIED, ACTIVE, ARCHIVED',
    ', renamedValues: { RETIRED: ARCHIVED }',
  );
  const api = join(spec, 'api.yaml');
  writeFileSync(
    api,
    readFileSync(api, 'utf8').replace(/^schemaVersion: (\d+)/m, (_, v) => `schemaVersion: ${Number(v) + 1}`),
  );
  const out = join(scratch, 'second');
  const r = generate(spec, out);
  assert.is(r.status, 0, r.out);
  const proto = catalogProto(out);
  const product = block(proto, 'message', 'Product');
  assert.ok(product.includes('string colour = 10;'), product.join('\n'));
  assert.ok(product.includes('int64 price = 4;'), 'a kept field keeps its number');
  assert.ok(!product.some((l) => / sku = /.test(l)));
  assert.ok(product.includes('reserved 3;'), product.join('\n'));
  assert.ok(product.includes('reserved "sku";'), product.join('\n'));
  assert.equal(block(proto, 'enum', 'Status'), [
    'STATUS_UNSPECIFIED = 0;',
    'ACTIVE = 1;',
    'ARCHIVED = 3;',
    'reserved 2;',
    'reserved "RETIRED";',
  ]);
  const lock = JSON.parse(readFileSync(join(spec, protoLockFile), 'utf8'));
  assert.equal(lock.messages['platform.catalog.v2.Product'].retired, { 3: 'sku' });
});

test('a pinned number a removed field had, or a message with nothing on the wire, fails generate with file and path', () => {
  writeCatalog(
    ['price: { type: int64 }', 'colour: { type: string }', 'grade: { type: string, proto: 3 }'],
    'STATUS_UNSPECIFIED, ACTIVE, ARCHIVED',
    ', renamedValues: { RETIRED: ARCHIVED }',
  );
  const reused = generate(spec, join(scratch, 'reused'));
  assert.is(reused.status, 1);
  const at = `${join(spec, 'catalog.yaml')}: /resources/0`;
  assert.match(reused.out, `${at}/fields/grade/proto: 3 was the number of sku, removed: it stays reserved`);

  const catalog = readFileSync(join(spec, 'catalog.yaml'), 'utf8');
  writeFileSync(
    join(spec, 'catalog.yaml'),
    catalog
      .replace(/^(\s+)stars: \{ (.*) \}$/m, '$1stars: { $2, proto: false }')
      .replace(/^(\s+)text: \{ (.*) \}$/m, '$1text: { $2, proto: false }')
      .concat('\n    proto: { numbers: {} }\n'),
  );
  const empty = generate(spec, join(scratch, 'empty'));
  assert.is(empty.status, 1);
  assert.match(
    empty.out,
    `${join(spec, 'catalog.yaml')}: /resources/1/proto: platform.catalog.v2.Review would have no fields on the gRPC wire`,
  );
});

test('the committed spec/proto.lock.json is what generate records for spec/ (commit it with the spec)', () => {
  const copy = join(scratch, 'platform');
  cpSync('spec', copy, { recursive: true });
  const r = generate(copy, join(scratch, 'platform-out'));
  assert.is(r.status, 0, r.out);
  assert.ok(
    readFileSync(join(copy, protoLockFile), 'utf8') === readFileSync(join('spec', protoLockFile), 'utf8'),
    'spec/proto.lock.json is out of date: run npm run generate and commit spec/proto.lock.json',
  );
});

test.run();
