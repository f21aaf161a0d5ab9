// A seeded fuzz of the gRPC surface, as a hostile client sends it, against one real server: every rpc of the
// generated protos (as proto-loader lists them) gets raw random bytes, truncated and garbled encodings of valid
// messages, structurally valid messages with hostile values (page sizes, NUL, 10k strings, fake and foreign uids,
// unknown enum numbers, int64 extremes, timestamps and durations out of range, odd map keys, two members of a
// oneof, update_mask paths that do not exist or point at output-only fields) and hostile authorization metadata.
// It asserts:
//   - every answer is OK or one of the codes our pipeline gives a caller's mistake, never INTERNAL or UNKNOWN;
//   - every error carries a google.rpc.Status in grpc-status-details-bin with exactly one ErrorInfo, except what
//     grpc-js answers before our handler runs: RESOURCE_EXHAUSTED for an oversized message, UNIMPLEMENTED for an
//     unknown method;
//   - every OK answer decodes as its response message; no message shows a stack trace, SQL or a file path;
//   - afterwards the server still answers HTTP and gRPC.
// Two authorization values (raw HTTP/2 frames: grpc-js will not send them) act as the first, as on HTTP.
// Then the escalation attempts of test/escalation.test.ts, over gRPC: each is refused as HTTP refuses it.
// FUZZ_SEED picks the inputs (the default is fixed), FUZZ_GRPC_PER_RPC how many requests each rpc gets (default 40).
// FUZZ_LOG=1 turns the server's log on, to read what an INTERNAL was.
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadProtoRoot } from '../runtime/grpc/proto-root.js';
import { readStatusDetails } from '../runtime/grpc/status.js';
import { fakeUid, Rng } from './support/fuzz-inputs.js';
import { grpcClient, loadDefinitions, type GrpcTestClient } from './support/grpc-client.js';
import { startTestServer, type TestServer } from './support/server.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) >>> 0 : 20260523;
const perRpc = Number(process.env.FUZZ_GRPC_PER_RPC ?? 40);
const concurrency = 8;
/** a guard against a hang, not a timing assertion: an answer that never comes fails as DEADLINE_EXCEEDED */
const deadlineMs = 20_000;

type Row = Record<string, unknown>;
const root = loadProtoRoot();
const S = grpc.status;

// ---------------------------------------------------------------------------------------------------------------
// The server, its records, its callers

let s: TestServer;
let raw: grpc.Client;
let c: GrpcTestClient;
/** uids by what they are: the records every valid request names */
const fx: Record<string, string> = {};
const tokens: Record<'owner' | 'viewer' | 'ghost', string> = { owner: '', viewer: '', ghost: '' };

async function make(path: string, body: object): Promise<string> {
  const r = await s.call('POST', path, body);
  if (r.status !== 200) throw new Error(`fuzz setup: POST ${path}: ${JSON.stringify(r.body)}`);
  return r.body.uid;
}

test.before(async () => {
  s = await startTestServer(undefined, process.env.FUZZ_LOG ? { LOG: 'on' } : {});
  raw = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
  c = grpcClient(s.url, s.token);
  const org = s.bootstrap.organization;
  fx.org = org;
  fx.group = await make(`/iam/v2/groups/${org}`, { name: 'fuzz team' });
  fx.otherOrg = await make('/iam/v2/groups', { name: 'other org' });
  fx.foreignRepo = await make(`/registry/v2/repos/${fx.otherOrg}`, { name: 'foreign' });
  fx.repo = await make(`/registry/v2/repos/${fx.group}`, { name: 'fuzz-repo' });
  fx.tag = await make(`/registry/v2/tags/${fx.repo}`, { name: '1.0', digest: `sha256:${'a'.repeat(64)}` });
  fx.identity = await make(`/iam/v2/identities/${fx.group}`, { name: 'fuzz identity' });
  fx.viewerIdentity = await make(`/iam/v2/identities/${org}`, { name: 'fuzz viewer' });
  fx.role = await make(`/iam/v2/roles/${fx.group}`, { name: 'fuzz role', capabilities: ['CAP_REPO_LIST'] });
  fx.viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  await make(`/iam/v2/roleBindings/${org}`, { identityUid: fx.viewerIdentity, roleUid: fx.viewer });
  fx.roleBinding = await make(`/iam/v2/roleBindings/${fx.group}`, { identityUid: fx.identity, roleUid: fx.role });
  const oidc = { issuer: 'https://idp.example', clientId: 'c' };
  fx.identityProvider = await make(`/iam/v2/identityProviders/${fx.group}`, {
    name: 'idp',
    defaultRole: fx.role,
    oidc,
  });
  fx.mapping = await make(`/iam/v2/externalGroupRoleMappings/${fx.identityProvider}`, {
    externalGroupId: 'g',
    roleUid: fx.role,
  });
  fx.accountAssociation = await make(`/iam/v2/accountAssociations/${fx.group}`, { name: 'aa' });
  fx.invite = await make(`/iam/v2/groupInvites/${fx.group}`, { roleUid: fx.role, ttl: '3600s' });
  fx.subscription = await make(`/events/v2/subscriptions/${fx.group}`, { sink: 'http://127.0.0.1:9/fuzz' });
  tokens.owner = s.token;
  tokens.viewer = await s.mint(fx.viewerIdentity);
  tokens.ghost = await s.mint(`${org}/${'0'.repeat(16)}`);
});

test.after(async () => {
  raw?.close();
  c?.close();
  await s?.stop();
});

// ---------------------------------------------------------------------------------------------------------------
// The rpcs, and valid values for their fields

interface Rpc {
  path: string;
  /** ReposService, RoleBindingsService, ... */
  service: string;
  name: string;
  request: protobuf.Type;
  response: protobuf.Type;
}

/** Every rpc of the generated protos, as a client's proto-loader lists them. */
function listRpcs(): Rpc[] {
  const definitions = loadDefinitions();
  return Object.keys(definitions)
    .filter((k) => k.startsWith('chainguard.platform.') && k.endsWith('Service'))
    .flatMap((k) =>
      Object.entries(definitions[k] as Record<string, { path: string }>).map(([name, d]) => {
        const method = root.lookupService(k).methods[name];
        return {
          path: d.path,
          service: k.split('.').pop()!,
          name,
          request: method.resolvedRequestType!,
          response: method.resolvedResponseType!,
        };
      }),
    );
}

/** The record an rpc's uid names, and the parent it creates under: by service. */
const ownRecord: Record<string, [own: string, parent: string]> = {
  ReposService: ['repo', 'group'],
  TagsService: ['tag', 'repo'],
  ImagesService: ['repo', 'group'],
  GroupsService: ['group', 'org'],
  IdentitiesService: ['identity', 'group'],
  RolesService: ['role', 'group'],
  RoleBindingsService: ['roleBinding', 'group'],
  IdentityProvidersService: ['identityProvider', 'group'],
  ExternalGroupRoleMappingsService: ['mapping', 'identityProvider'],
  AccountAssociationsService: ['accountAssociation', 'group'],
  GroupInvitesService: ['invite', 'group'],
  SubscriptionsService: ['subscription', 'group'],
  TermsService: ['group', 'group'],
};

/** A real uid for a string field that names a record, or undefined for a field that names none. */
function uidFor(rng: Rng, rpc: Rpc, field: string): string | undefined {
  const [own, parent] = ownRecord[rpc.service] ?? ['group', 'org'];
  if (field === 'uid') return fx[own];
  if (field === 'parent' || field === 'group') return fx[parent];
  if (/role/.test(field)) return rng.pick([fx.role, fx.viewer]);
  if (/identity_provider/.test(field)) return fx.identityProvider;
  if (/identity/.test(field)) return fx.identity;
  if (field === 'repo_uid') return fx.repo;
  if (/_of$|^ids$|^scope$/.test(field)) return rng.pick([fx.org, fx.group]);
  if (field === 'artifact_id') return fakeUid(rng, 0);
  return undefined;
}

const scalarValid = (rng: Rng, f: protobuf.Field): unknown => {
  switch (f.type) {
    case 'bool':
      return rng.chance(0.5);
    case 'int32':
    case 'int64':
    case 'uint32':
    case 'uint64':
      return /page_size|skip/.test(f.name) ? rng.int(5) : 1 + rng.int(1000);
    case 'bytes':
      return Buffer.from(rng.hex(8), 'hex');
    case 'double':
    case 'float':
      return rng.next();
    default:
      return rng.pick(['fuzz', `fuzz-${rng.hex(4)}`, 'https://issuer.example', `sha256:${'a'.repeat(64)}`, 'x86_64']);
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Hostile values. None contains what the leak check looks for (SQL keywords, file paths, stack frames).

const hostileStrings = [
  '',
  '\u0000',
  'a\u0000b',
  'x'.repeat(10_000),
  '..',
  '../..',
  '%2e%2e%2f',
  '\u202e\u0301',
  '\ud800',
  '\uffff',
  '日本',
  "' OR '1'='1",
  '"; --',
  '%',
  '*',
  '\\',
  '${x}',
  '{{x}}',
  ' ',
  '\t\r\n',
];
const hostileInt32 = [-1, -2147483648, 2147483647, 0x7fffffff, 1e9, 1001, 100_000];
const int64Extremes = ['9223372036854775807', '-9223372036854775808', '-1', '0', '4294967296'];

function hostileUid(rng: Rng, real: string): string {
  return rng.pick([
    fakeUid(rng),
    fakeUid(rng, 1),
    `${real}/..`,
    `${real}/../${rng.hex(16)}`,
    `${fx.org}/../${fx.otherOrg}`,
    fx.otherOrg,
    fx.foreignRepo,
    real.toUpperCase(),
    `${real}\u0000`,
    `${real}/`,
    `/${real}`,
    real.replace(/\//g, '%2F'),
    real.slice(0, -1),
    `${real}/${'0'.repeat(16)}`,
    'x'.repeat(10_000),
    '..',
    '',
    rng.pick(hostileStrings),
  ]);
}

function hostileScalar(rng: Rng, f: protobuf.Field, real: string | undefined): unknown {
  switch (f.type) {
    case 'bool':
      return rng.chance(0.5);
    case 'int32':
      return rng.pick(hostileInt32);
    case 'uint32':
      return rng.pick([0, 4294967295, 2147483648]);
    case 'int64':
    case 'uint64':
      return rng.pick(int64Extremes);
    case 'double':
    case 'float':
      return rng.pick([NaN, Infinity, -Infinity, -0, 1e308]);
    case 'bytes':
      return Buffer.from(rng.hex(2 * rng.int(64)), 'hex');
    default:
      return real !== undefined ? hostileUid(rng, real) : rng.pick(hostileStrings);
  }
}

const timestamps: Row[] = [
  { seconds: '1000000000000' },
  { seconds: '-1000000000000' },
  { seconds: '253402300800' },
  { seconds: '-62135596801' },
  { seconds: '9223372036854775807', nanos: 999999999 },
  { seconds: '-9223372036854775808' },
  { seconds: '0', nanos: -1 },
  { seconds: '1700000000', nanos: 2_000_000_000 },
  { seconds: '1700000000', nanos: -2147483648 },
];
const durations: Row[] = [
  { seconds: '-1' },
  { seconds: '1000000000000' },
  { seconds: '315576000001' },
  { seconds: '9223372036854775807' },
  { seconds: '-9223372036854775808' },
  { seconds: '1', nanos: -1 },
  { seconds: '0', nanos: -500_000_000 },
  { seconds: '0', nanos: 1_000_000_000 },
  { seconds: '3600', nanos: 2147483647 },
];
const mapKeys = ['', '\u0000', '..', '__proto__', 'constructor', 'toString', 'x'.repeat(10_000), 'a.b', '日本', '$x'];

/** update_mask paths: none that exist, output-only ones, '*', nested ones, duplicates, junk. */
function hostileMask(rng: Rng, body: protobuf.Type | undefined): string[] {
  const real = body?.fieldsArray.map((f) => f.name) ?? ['name'];
  const nested = body?.fieldsArray.filter((f) => f.resolvedType instanceof protobuf.Type) ?? [];
  const one = (): string =>
    rng.pick([
      'no_such_field',
      'uid',
      'create_time',
      'update_time',
      '*',
      'name.*',
      '',
      '.',
      'a..b',
      '__proto__',
      'constructor',
      rng.pick(real),
      `${rng.pick(real)}.nope`,
      nested.length ? `${rng.pick(nested).name}.${rng.pick(['nope', 'seconds', 'issuer', 'source'])}` : 'x.y',
      'Name',
      'name,description',
      'x'.repeat(10_000),
      '\u0000',
    ]);
  return Array.from({ length: 1 + rng.int(3) }, one);
}

// ---------------------------------------------------------------------------------------------------------------
// Messages

interface Gen {
  rng: Rng;
  rpc: Rpc;
  /** the chance that any one field gets a hostile value */
  hostility: number;
  /** what was made hostile, for grouping failures */
  labels: string[];
}

function enumValue(g: Gen, e: protobuf.Enum, hostile: boolean, at: string): number {
  if (!hostile) return g.rng.pick(Object.values(e.values));
  g.labels.push(`${at}:unknown-enum`);
  return g.rng.pick([-1, 999, 2147483647, -2147483648, Math.max(...Object.values(e.values)) + 1]);
}

function messageValue(g: Gen, t: protobuf.Type, hostile: boolean, at: string, depth: number): unknown {
  switch (t.fullName) {
    case '.google.protobuf.Timestamp':
      if (hostile) g.labels.push(`${at}:timestamp-out-of-range`);
      return hostile ? g.rng.pick(timestamps) : { seconds: String(1_700_000_000 + g.rng.int(1e6)) };
    case '.google.protobuf.Duration':
      if (hostile) g.labels.push(`${at}:duration-out-of-range`);
      return hostile ? g.rng.pick(durations) : { seconds: String(60 + g.rng.int(3600)) };
    case '.google.protobuf.FieldMask': {
      const body = g.rpc.request.fieldsArray.find((f) => f.resolvedType instanceof protobuf.Type && f.name !== at);
      const type = body?.resolvedType as protobuf.Type | undefined;
      if (hostile) g.labels.push('update_mask:hostile-paths');
      return { paths: hostile ? hostileMask(g.rng, type) : [g.rng.pick(type?.fieldsArray ?? []).name] };
    }
    default:
      return depth > 3 ? {} : messageOf(g, t, depth + 1, at);
  }
}

function fieldValue(g: Gen, f: protobuf.Field, at: string, depth: number): unknown {
  const hostile = g.rng.chance(g.hostility);
  const t = f.resolvedType;
  if (t instanceof protobuf.Enum) return enumValue(g, t, hostile, at);
  if (t instanceof protobuf.Type) return messageValue(g, t, hostile, at, depth);
  const real = f.type === 'string' ? uidFor(g.rng, g.rpc, f.name) : undefined;
  if (!hostile) return real ?? scalarValid(g.rng, f);
  g.labels.push(`${at}:hostile-${real !== undefined ? 'uid' : f.type}`);
  return hostileScalar(g.rng, f, real);
}

function mapValue(g: Gen, f: protobuf.Field, at: string, depth: number): Row {
  const { keyType } = f as unknown as protobuf.MapField;
  const out: Row = {};
  const odd = g.rng.chance(g.hostility * 2);
  if (odd) g.labels.push(`${at}:odd-map-keys`);
  const n = g.rng.int(4);
  for (let i = 0; i < n; i++) {
    const key = keyType === 'string' ? (odd ? g.rng.pick(mapKeys) : `k${i}`) : odd ? g.rng.pick(int64Extremes) : i;
    out[String(key)] = fieldValue(g, f, `${at}{}`, depth);
  }
  return out;
}

/** A message of t as protobufjs encodes it: some fields set; a oneof gets one member, or two when hostile. */
function messageOf(g: Gen, t: protobuf.Type, depth = 0, path = ''): Row {
  const out: Row = {};
  const twoOf = new Set(t.oneofsArray.filter(() => g.rng.chance(g.hostility)).map((o) => o.name));
  const chosen = new Map(t.oneofsArray.map((o) => [o.name, g.rng.pick(o.fieldsArray).name]));
  for (const f of t.fieldsArray) {
    const at = path ? `${path}.${f.name}` : f.name;
    const oneof = f.partOf && f.partOf.fieldsArray.length > 1 ? f.partOf.name : undefined;
    if (oneof && !twoOf.has(oneof) && chosen.get(oneof) !== f.name) continue;
    if (f.name !== 'uid' && f.name !== 'parent' && !g.rng.chance(0.6)) continue;
    if (f.map) out[f.name] = mapValue(g, f, at, depth);
    else if (f.repeated) out[f.name] = Array.from({ length: 1 + g.rng.int(3) }, () => fieldValue(g, f, at, depth));
    else out[f.name] = fieldValue(g, f, at, depth);
  }
  if (twoOf.size) g.labels.push(`${path || '(message)'}:two-oneof-members`);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Requests: bytes, authorization, and what is allowed to come back

interface Case {
  rpc: Rpc;
  path: string;
  label: string;
  bytes: Buffer;
  /** authorization metadata values: none, one, or two */
  auth: string[];
}

/** Bytes of a valid message made wrong: truncated, bytes flipped, a wire type changed, a length overstated. */
function garble(rng: Rng, valid: Buffer): [string, Buffer] {
  const b = Buffer.from(valid);
  const kind = rng.pick(['truncated', 'flipped', 'wire-type', 'long-length', 'appended', 'unknown-fields']);
  if (kind === 'truncated') return [kind, b.subarray(0, rng.int(Math.max(1, b.length)))];
  if (kind === 'flipped') {
    for (let i = 0; i < 1 + rng.int(4) && b.length; i++) b[rng.int(b.length)] = rng.int(256);
    return [kind, b];
  }
  if (kind === 'wire-type') {
    const field = 1 + rng.int(8);
    return [kind, Buffer.concat([Buffer.from([(field << 3) | rng.pick([0, 1, 2, 3, 4, 5, 6, 7])]), b])];
  }
  if (kind === 'long-length') return [kind, Buffer.concat([b, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x07, 1])])];
  if (kind === 'appended') return [kind, Buffer.concat([b, Buffer.from(rng.hex(2 + 2 * rng.int(32)), 'hex')])];
  // Unknown field numbers, high and low: proto3 skips them.
  const unknown = protobuf.Writer.create()
    .uint32((12345 << 3) | 2)
    .string('x')
    .uint32((536870911 << 3) | 0)
    .uint64(7);
  return [kind, Buffer.concat([b, Buffer.from(unknown.finish())])];
}

/** Groups nested deeper than any parser recurses, and a message nested past its depth. */
function deepBytes(rng: Rng): [string, Buffer] {
  const depth = rng.pick([1_000, 100_000]);
  if (rng.chance(0.5)) return ['deep-groups', Buffer.alloc(depth, 0x0b)];
  const parts: number[] = [];
  for (let i = 0; i < depth; i++) parts.push(0x0a, 0x00);
  return ['deep-lengths', Buffer.from(parts)];
}

function authorization(rng: Rng): [string, string[]] {
  const kind = rng.weighted([
    [20, 'owner'],
    [4, 'viewer'],
    [1, 'none'],
    [1, 'garbage'],
    [1, 'basic'],
    [1, 'ghost'],
    [1, 'lowercase-bearer'],
    [1, 'empty-bearer'],
  ] as const);
  const bearer = (t: string) => `Bearer ${t}`;
  const values: Record<typeof kind, string[]> = {
    owner: [bearer(tokens.owner)],
    viewer: [bearer(tokens.viewer)],
    none: [],
    garbage: [bearer(rng.pick(['garbage', 'a.b.c', `${tokens.owner.slice(0, -2)}AA`, 'x'.repeat(8000)]))],
    basic: ['Basic x'],
    ghost: [bearer(tokens.ghost)],
    'lowercase-bearer': [`bearer ${tokens.owner}`],
    'empty-bearer': ['Bearer '],
  };
  return [kind, values[kind]];
}

// grpc-js (and node:http2) refuse to send two authorization values; a hostile client writes its own frames.

/** An HPACK string or integer with a 7-bit prefix, never Huffman-coded. */
function hpackInt(n: number): number[] {
  if (n < 127) return [n];
  const out = [127];
  for (n -= 127; n >= 128; n >>= 7) out.push((n & 127) | 128);
  return [...out, n];
}
const hpackLiteral = (name: string, value: string) => [
  0,
  ...hpackInt(name.length),
  ...Buffer.from(name),
  ...hpackInt(value.length),
  ...Buffer.from(value),
];

function h2Frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** One unary call on a raw connection with the given header fields; answers once the server ends stream 1. */
function rawUnary(path: string, message: Buffer, authorization: string[]): Promise<'answered' | 'reset' | 'closed'> {
  const { host, port } = new URL(s.url);
  const fields = [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', host],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...authorization.map((v) => ['authorization', v]),
  ];
  const grpcMessage = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
  grpcMessage.writeUInt32BE(message.length, 1);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
  socket.write(h2Frame(4, 0, 0, Buffer.alloc(0)));
  socket.write(h2Frame(1, 4, 1, Buffer.from(fields.flatMap(([n, v]) => hpackLiteral(n, v)))));
  socket.write(h2Frame(0, 1, 1, grpcMessage));
  return new Promise((resolve) => {
    let input = Buffer.alloc(0);
    const done = (how: 'answered' | 'reset' | 'closed') => {
      socket.destroy();
      resolve(how);
    };
    socket.on('data', (b: Buffer) => {
      for (input = Buffer.concat([input, b]); input.length >= 9 && input.length >= 9 + input.readUIntBE(0, 3);) {
        const [type, flags, stream] = [input[3], input[4], input.readUInt32BE(5) & 0x7fffffff];
        input = input.subarray(9 + input.readUIntBE(0, 3));
        if (type === 4 && !(flags & 1)) socket.write(h2Frame(4, 1, 0, Buffer.alloc(0)));
        if (stream === 1 && type === 1 && flags & 1) return done('answered');
        if (stream === 1 && type === 3) return done('reset');
      }
    });
    socket.on('close', () => done('closed'));
    socket.on('error', () => done('closed'));
  });
}

/** The cases of one rpc, from its own stream of the seed. */
function casesOf(rpc: Rpc, index: number): Case[] {
  const rng = new Rng(seed ^ Math.imul(index + 1, 0x9e3779b1));
  const cases: Case[] = [];
  for (let i = 0; i < perRpc; i++) {
    const [authLabel, auth] = authorization(rng);
    const g: Gen = { rng, rpc, hostility: rng.pick([0, 0.1, 0.3, 0.6]), labels: [] };
    const valid = Buffer.from(rpc.request.encode(messageOf(g, rpc.request)).finish());
    const shape = rng.weighted([
      [6, 'message'],
      [2, 'garbled'],
      [1, 'random-bytes'],
      [0.3, 'deep'],
    ] as const);
    let label = g.labels[0] ?? (g.hostility ? 'valid' : 'plain');
    let bytes: Buffer = valid;
    if (shape === 'garbled') [label, bytes] = garble(rng, valid);
    else if (shape === 'random-bytes') [label, bytes] = ['random-bytes', Buffer.from(rng.hex(2 * rng.int(96)), 'hex')];
    else if (shape === 'deep') [label, bytes] = deepBytes(rng);
    cases.push({ rpc, path: rpc.path, label: `${shape}:${label} auth:${authLabel}`, bytes, auth });
  }
  return cases;
}

/** What only grpc-js answers, before our handler runs. */
function transportCases(rpc: Rpc, oversize: boolean): Case[] {
  const auth = [`Bearer ${tokens.owner}`];
  const oversized = Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x01]), Buffer.alloc(1024 * 1024 + 1)]);
  return [
    ...(oversize ? [{ rpc, path: rpc.path, label: 'transport:oversized', bytes: oversized, auth }] : []),
    { rpc, path: `${rpc.path}Nope`, label: 'transport:unknown-method', bytes: Buffer.alloc(0), auth },
    {
      rpc,
      path: `/chainguard.platform.NoService/${rpc.name}`,
      label: 'transport:unknown-method',
      bytes: Buffer.alloc(0),
      auth,
    },
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Sending and judging

interface Answer {
  code: number;
  details: string;
  statusBin?: Buffer;
  value?: Buffer;
}

function send(k: Case): Promise<Answer> {
  const metadata = new grpc.Metadata();
  for (const v of k.auth) metadata.add('authorization', v);
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      k.path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      k.bytes,
      metadata,
      { deadline: Date.now() + deadlineMs },
      (e, value) => {
        if (!e) return resolve({ code: 0, details: '', value });
        const bin = e.metadata?.get('grpc-status-details-bin')[0];
        resolve({ code: e.code, details: e.details, statusBin: bin as Buffer | undefined });
      },
    );
  });
}

const callerCodes = new Set([
  S.OK,
  S.INVALID_ARGUMENT,
  S.NOT_FOUND,
  S.ALREADY_EXISTS,
  S.PERMISSION_DENIED,
  S.FAILED_PRECONDITION,
  S.ABORTED,
  S.UNAUTHENTICATED,
  S.RESOURCE_EXHAUSTED,
  S.UNIMPLEMENTED,
  S.OUT_OF_RANGE,
]);
const leaks: [string, RegExp][] = [
  ['a stack trace', /\bat [^()\n"]{1,200} \([^()\n"]*:\d+:\d+\)|\n\s+at \S/],
  [
    'SQL',
    /SQLITE|\bselect\s+[\w"`*.,\s]+\sfrom\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+[`"]?\w+[`"]?\s+set\b/i,
  ],
  ['a file path', /\/work\/|\/tmp\/|node_modules|\.ts:|\.js:\d|file:\/\//],
];

/** What is wrong with an answer, as short labels (grouped over the run). */
function judge(k: Case, a: Answer): string[] {
  const problems: string[] = [];
  if (!callerCodes.has(a.code)) problems.push(`code ${S[a.code]}`);
  const text = [a.details, a.statusBin ? readStatusDetails(a.statusBin).message : ''].join('\n');
  for (const [what, pattern] of leaks) if (pattern.test(text)) problems.push(`leaks ${what}`);
  if (a.code === S.OK) {
    try {
      k.rpc.response.decode(a.value!);
    } catch {
      problems.push('an answer that does not decode');
    }
    return problems;
  }
  const transport = k.label.startsWith('transport:');
  if (transport) {
    const want = k.label === 'transport:oversized' ? S.RESOURCE_EXHAUSTED : S.UNIMPLEMENTED;
    if (a.code !== want || a.statusBin) problems.push(`${k.label} answered ${S[a.code]} (details: ${!!a.statusBin})`);
    return problems;
  }
  if (!a.statusBin) return [...problems, 'no grpc-status-details-bin'];
  let status;
  try {
    status = readStatusDetails(a.statusBin);
  } catch {
    return [...problems, 'undecodable grpc-status-details-bin'];
  }
  const infos = status.details.filter((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  if (infos.length !== 1) problems.push(`${infos.length} ErrorInfo`);
  if (status.code !== a.code) problems.push('the Status code is not the call code');
  return problems;
}

async function runAll(cases: Case[], onAnswer: (k: Case, a: Answer) => void): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const k = cases[next++];
      onAnswer(k, await send(k));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

test('fuzz: every rpc, hostile bytes, values and tokens: only caller codes, structured errors, no leaks', async () => {
  const rpcs = listRpcs();
  assert.ok(rpcs.length >= 67, `${rpcs.length} rpcs`);
  // An oversized message is a megabyte: a few rpcs get one.
  const all = rpcs.flatMap((rpc, i) => [...casesOf(rpc, i), ...transportCases(rpc, i % 10 === 0)]);
  // Deletes last: the records the other rpcs name stay until then.
  const cases = [
    ...all.filter((k) => !k.rpc.name.startsWith('Delete')),
    ...all.filter((k) => k.rpc.name.startsWith('Delete')),
  ];
  const failures = new Map<string, { count: number; example: string }>();
  const codes = new Map<string, number>();
  await runAll(cases, (k, a) => {
    codes.set(S[a.code], (codes.get(S[a.code]) ?? 0) + 1);
    for (const p of judge(k, a)) {
      const key = `${p} <- ${k.rpc.service}/${k.rpc.name} ${k.label}`;
      const f = failures.get(key) ?? { count: 0, example: `${S[a.code]}: ${a.details.slice(0, 300)}` };
      f.count++;
      failures.set(key, f);
    }
  });
  if (process.env.FUZZ_DEBUG) console.log(`seed ${seed}: ${cases.length} requests`, Object.fromEntries(codes));
  const report = [...failures].map(([k, f]) => `  ${f.count}x ${k}\n      ${f.example}`).join('\n');
  assert.is(failures.size, 0, `seed ${seed}, ${cases.length} requests:\n${report}`);
  assert.ok((codes.get('OK') ?? 0) > cases.length / 20, `some requests succeed: ${JSON.stringify([...codes])}`);
});

test('after the fuzz the server still answers HTTP and gRPC', async () => {
  assert.is((await s.call('GET', '/ping/v2/ping')).status, 200);
  const r = await c.call('ping.v2.PingService', 'Ping', {});
  assert.equal(r.value, { response: 'pong' });
  const repos = await c.call('registry.v2.ReposService', 'ListRepos', { uidp: { descendants_of: fx.org } });
  assert.is(repos.code, 0, repos.message);
});

/** An HTTP/1.1 request with the given Authorization headers, on a raw socket (fetch joins them): its status. */
function rawHttp(path: string, body: object, authorization: string[]): Promise<number> {
  const text = JSON.stringify(body);
  const head = [
    `POST ${path} HTTP/1.1`,
    'Host: fuzz',
    ...authorization.map((v) => `Authorization: ${v}`),
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
  ];
  const socket = net.connect(Number(new URL(s.url).port), '127.0.0.1');
  socket.write(`${head.join('\r\n')}\r\n\r\n${text}`);
  let answer = '';
  socket.on('data', (b: Buffer) => (answer += b.toString('latin1')));
  return new Promise((resolve) => socket.on('close', () => resolve(Number(answer.split(' ')[1]))));
}

test('two authorization values: as on HTTP, the first is the caller, never the stronger of the two', async () => {
  // Node keeps the first of repeated Authorization fields, over HTTP/1.1 and HTTP/2 alike.
  const create = root.lookupType('chainguard.platform.registry.v2.CreateRepoRequest');
  const path = '/chainguard.platform.registry.v2.ReposService/CreateRepo';
  const [owner, viewer] = [`Bearer ${tokens.owner}`, `Bearer ${tokens.viewer}`];
  const made = async (name: string) => (await s.call('GET', `/registry/v2/repos?name=${name}`)).body.repos.length;
  for (const [i, pair] of [
    [viewer, owner],
    [owner, viewer],
    ['Bearer garbage', owner],
  ].entries()) {
    const bytes = Buffer.from(create.encode({ parent: fx.group, repo: { name: `two-grpc-${i}` } }).finish());
    assert.is(await rawUnary(path, bytes, pair), 'answered', `pair ${i}`);
    const status = await rawHttp(`/registry/v2/repos/${fx.group}`, { name: `two-http-${i}` }, pair);
    assert.is(await made(`two-grpc-${i}`), pair[0] === owner ? 1 : 0, `pair ${i} over gRPC acts as the first`);
    assert.is(await made(`two-http-${i}`), status === 200 ? 1 : 0, `pair ${i} over HTTP`);
    assert.is(await made(`two-grpc-${i}`), await made(`two-http-${i}`), `pair ${i}: gRPC as HTTP`);
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Escalation over gRPC: each refused exactly as HTTP refuses it (test/escalation.test.ts)

const builtIn: Record<string, string> = {};
let team: string;
let teamOwner: string;
let asTeamOwner: string;

async function teamSetup() {
  if (asTeamOwner) return;
  for (const r of (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles) builtIn[r.name] = r.uid;
  team = await make(`/iam/v2/groups/${fx.org}`, { name: 'escalation team' });
  teamOwner = await make(`/iam/v2/identities/${team}`, { name: 'team owner' });
  await make(`/iam/v2/roleBindings/${team}`, { identityUid: teamOwner, roleUid: builtIn.owner });
  asTeamOwner = await s.mint(teamOwner);
}

/** The gRPC answer is the HTTP one: the same code and message. */
async function sameAsHttp(
  what: string,
  grpcCall: [service: string, rpc: string, request: object],
  http: [method: string, path: string, body: object],
  want: number,
) {
  const g = await c.call(...grpcCall, asTeamOwner);
  const h = await s.call(...http, { authorization: `Bearer ${asTeamOwner}` });
  assert.is(g.code, want, `${what} over gRPC: ${g.message}`);
  assert.is(h.body.code, want, `${what} over HTTP: ${JSON.stringify(h.body)}`);
  assert.is(g.message, h.body.message, what);
  return g;
}

test('escalation: a subgroup owner cannot widen a role bound to it, with a mask of capabilities or none', async () => {
  await teamSetup();
  const Ro = 'iam.v2.RolesService';
  const role = (
    await c.call(
      Ro,
      'CreateRole',
      { parent: team, role: { name: 'mine', capabilities: ['CAP_REPO_LIST'] } },
      asTeamOwner,
    )
  ).value;
  await make(`/iam/v2/roleBindings/${team}`, { identityUid: teamOwner, roleUid: role.uid });
  const widened = ['CAP_REPO_LIST', 'CAP_ADVISORIES_CREATE'];
  for (const [paths, query] of [
    [['capabilities'], '?updateMask=capabilities'],
    [undefined, ''],
    [['capabilities', 'description'], '?updateMask=capabilities,description'],
    [['*'], '?updateMask=*'],
  ] as const) {
    const r = await sameAsHttp(
      `UpdateRole ${paths ?? 'without a mask'}`,
      [
        Ro,
        'UpdateRole',
        { role: { uid: role.uid, name: 'mine', capabilities: widened }, ...(paths && { update_mask: { paths } }) },
      ],
      ['PATCH', `/iam/v2/roles/${role.uid}${query}`, { name: 'mine', capabilities: widened }],
      S.PERMISSION_DENIED,
    );
    assert.match(r.message!, /CAP_ADVISORIES_CREATE/);
  }
  await sameAsHttp(
    'CreateRole with a capability the caller lacks',
    [Ro, 'CreateRole', { parent: team, role: { name: 'wide', capabilities: ['CAP_ADVISORIES_CREATE'] } }],
    ['POST', `/iam/v2/roles/${team}`, { name: 'wide', capabilities: ['CAP_ADVISORIES_CREATE'] }],
    S.PERMISSION_DENIED,
  );
  assert.equal((await c.call(Ro, 'GetRole', { uid: role.uid })).value.capabilities, ['CAP_REPO_LIST'], 'unchanged');
});

test('escalation: no record is made at the root where HTTP has no root route (a root role is bound everywhere)', async () => {
  await teamSetup();
  for (const [service, rpc, request, path] of [
    [
      'iam.v2.RolesService',
      'CreateRole',
      { role: { name: 'everywhere', capabilities: ['CAP_REPO_LIST'] } },
      '/iam/v2/roles',
    ],
    ['registry.v2.ReposService', 'CreateRepo', { repo: { name: 'rootless' } }, '/registry/v2/repos'],
    [
      'iam.v2.RoleBindingsService',
      'CreateRoleBinding',
      { role_binding: { identity_uid: teamOwner, role_uid: builtIn.owner } },
      '/iam/v2/roleBindings',
    ],
  ] as const) {
    for (const token of [asTeamOwner, tokens.owner]) {
      const r = await c.call(service, rpc, { parent: '', ...request }, token);
      assert.is(r.code, S.INVALID_ARGUMENT, `${rpc} without a parent: ${r.message}`);
      assert.match(r.message!, /parent: parent is required/);
    }
    assert.ok([404, 405].includes((await s.call('POST', path, {})).status), `HTTP has no ${path} create`);
  }
  assert.is((await s.call('GET', '/iam/v2/roles?name=everywhere')).body.roles.length, 0);
  // Groups and identities do have a root create on HTTP, and the same refusal for a confined caller.
  await sameAsHttp(
    'CreateIdentity at the root',
    ['iam.v2.IdentitiesService', 'CreateIdentity', { identity: { name: 'escape' } }],
    ['POST', '/iam/v2/identities', { name: 'escape' }],
    S.FAILED_PRECONDITION,
  );
});

test('escalation: a binding to a stronger role, or a role of the parent group, is refused as on HTTP', async () => {
  await teamSetup();
  const B = 'iam.v2.RoleBindingsService';
  const orgRole = await make(`/iam/v2/roles/${fx.org}`, {
    name: 'org author',
    capabilities: ['CAP_ADVISORIES_CREATE'],
  });
  for (const roleUid of [builtIn['advisories.author'], orgRole]) {
    await sameAsHttp(
      `CreateRoleBinding to ${roleUid}`,
      [B, 'CreateRoleBinding', { parent: team, role_binding: { identity_uid: teamOwner, role_uid: roleUid } }],
      ['POST', `/iam/v2/roleBindings/${team}`, { identityUid: teamOwner, roleUid }],
      S.PERMISSION_DENIED,
    );
  }
  const weak = await make(`/iam/v2/roleBindings/${team}`, { identityUid: teamOwner, roleUid: builtIn.viewer });
  for (const [paths, query] of [
    [['role_uid'], '?updateMask=roleUid'],
    [undefined, ''],
    [['*'], '?updateMask=*'],
  ] as const) {
    await sameAsHttp(
      `UpdateRoleBinding ${paths ?? 'without a mask'}`,
      [
        B,
        'UpdateRoleBinding',
        { role_binding: { uid: weak, role_uid: orgRole }, ...(paths && { update_mask: { paths } }) },
      ],
      ['PATCH', `/iam/v2/roleBindings/${weak}${query}`, { roleUid: orgRole }],
      S.PERMISSION_DENIED,
    );
  }
  assert.is((await s.call('GET', `/iam/v2/roleBindings/${weak}`)).body.roleUid, builtIn.viewer, 'unchanged');
});

test('escalation: who may act as an identity (claim_match, static_keys) changes only as HTTP allows', async () => {
  await teamSetup();
  const Id = 'iam.v2.IdentitiesService';
  const robot = await make(`/iam/v2/identities/${team}`, { name: 'robot' });
  await make(`/iam/v2/roleBindings/${team}`, { identityUid: robot, roleUid: builtIn['advisories.author'] });
  const mine = { issuer: 'https://issuer.attacker.example', subject: 'me' };
  for (const [paths, query] of [
    [['claim_match'], '?updateMask=claimMatch'],
    [undefined, ''],
    [['claim_match.issuer', 'claim_match.subject'], '?updateMask=claimMatch.issuer,claimMatch.subject'],
    [['*'], '?updateMask=*'],
  ] as const) {
    await sameAsHttp(
      `UpdateIdentity claim_match ${paths ?? 'without a mask'}`,
      [
        Id,
        'UpdateIdentity',
        { identity: { uid: robot, name: 'robot', claim_match: mine }, ...(paths && { update_mask: { paths } }) },
      ],
      ['PATCH', `/iam/v2/identities/${robot}${query}`, { name: 'robot', claimMatch: mine }],
      S.PERMISSION_DENIED,
    );
  }
  const keys = { issuer: 'i', subject: 's', issuer_keys: '{}' };
  await sameAsHttp(
    'UpdateIdentity static_keys',
    [Id, 'UpdateIdentity', { identity: { uid: robot, static_keys: keys }, update_mask: { paths: ['static_keys'] } }],
    [
      'PATCH',
      `/iam/v2/identities/${robot}?updateMask=staticKeys`,
      { staticKeys: { issuer: 'i', subject: 's', issuerKeys: '{}' } },
    ],
    S.PERMISSION_DENIED,
  );
  assert.is((await s.call('GET', `/iam/v2/identities/${robot}`)).body.claimMatch, undefined, 'unchanged');
  const other = await c.call(
    Id,
    'UpdateIdentity',
    { identity: { uid: robot, description: 'd' }, update_mask: { paths: ['description'] } },
    asTeamOwner,
  );
  assert.is(other.code, 0, `other fields: ${other.message}`);
});

test.run();
