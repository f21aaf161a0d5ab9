// The fuzz test's inputs: a seeded random source, and generators of valid and hostile values for each part of a
// request (path uids, query strings, JSON bodies, tokens) and of raw HTTP requests that Node's parser refuses.
// Nothing here sends anything. Every mutator returns the value as it goes on the wire and a label naming the
// kind of mutation (the label, never the value, is what failures are grouped by).
//
// No generated value contains what the test looks for in answers (SQL keywords, file paths, stack frames), so
// an answer that echoes its input never looks like a leak.

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  /** Picks by weight; entries with weight 0 are never picked. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    const total = choices.reduce((s, [w]) => s + w, 0);
    let r = this.next() * total;
    for (const [w, v] of choices) {
      if ((r -= w) < 0) return v;
    }
    return choices[choices.length - 1][1];
  }
  hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[this.int(16)];
    return s;
  }
}

export interface Mutated<T = string> {
  value: T;
  label: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Numbers, strings and encodings that break parsers

/** Query values for integer parameters that are not small non-negative integers. */
export const hostileNumbers = [
  '1e99',
  '99999999999999999999',
  'Infinity',
  '-Infinity',
  '-1',
  '1e400',
  'NaN',
  '0x10',
  '1.5',
  '-0',
  '1e-400',
  '9007199254740993',
  '-9223372036854775809',
  '0b11',
  '+5',
  '%205',
  '5%20',
  '1_000',
  '00000000000000000001',
] as const;

const percent = (s: string) =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** Percent-encoded unicode: accents, a snowman, an emoji, full-width digits, a bidi override, a combining mark. */
const unicodeEncoded = ['%C3%A9', '%E2%98%83', '%F0%9F%92%A9', '%EF%BC%91', '%E2%80%AE', '%CC%81', percent('日本')];
/** Broken percent-encoding: invalid UTF-8, a lone %, non-hex digits, an overlong '/', a truncated sequence, an encoded surrogate. */
const badPercent = ['%ff', '%', '%zz', '%c0%af', '%e2%82', '%ed%a0%80', '%fe%ff', '%8'];

/** A uid-shaped string: 40 hex, then levels of "/16 hex". */
export function fakeUid(rng: Rng, levels = rng.int(3)): string {
  let uid = rng.hex(40);
  for (let i = 0; i < levels; i++) uid += `/${rng.hex(16)}`;
  return uid;
}

// ---------------------------------------------------------------------------------------------------------------
// Path uids

/**
 * A hostile value for a uid in a path, as it goes on the wire (the uid's own "/" unescaped, as the spec allows).
 * `real` is a uid of the right kind, `other` a real uid of another kind.
 */
export function mutatePathUid(rng: Rng, real: string, other: string): Mutated {
  const kind = rng.weighted([
    [2, 'other-kind'],
    [2, 'fake'],
    [3, 'malformed'],
    [1, 'escaped-slash'],
    [1, 'percent-encoded'],
    [3, 'nul'],
    [1, 'long'],
    [0.3, 'over-16k'],
    [2, 'unicode'],
    [2, 'bad-percent'],
    [1, 'verb'],
    [1, 'dots'],
    [1, 'slashes'],
    [0.5, 'empty'],
    [0.5, 'uppercase'],
  ] as const);
  const at = (s: string) => 1 + rng.int(Math.max(1, s.length - 1));
  const value = ((): string => {
    switch (kind) {
      case 'other-kind':
        return other;
      case 'fake':
        return rng.chance(0.5) ? fakeUid(rng) : `${real}/${rng.hex(16)}`;
      case 'malformed':
        return rng.pick([
          'abc',
          'x',
          '0',
          '-',
          '_',
          'g'.repeat(40),
          rng.hex(39),
          rng.hex(41),
          `${rng.hex(40)}/${rng.hex(15)}`,
          `${rng.hex(40)}/`,
          'null',
          'undefined',
          '[]',
          '%7B%7D',
          'true',
          '1e99',
          '-1',
        ]);
      case 'escaped-slash':
        return real.replace(/\//g, rng.pick(['%2F', '%2f', '%252F']));
      case 'percent-encoded':
        return percent(real);
      case 'nul': {
        const i = at(real);
        return rng.pick([
          `${real}%00`,
          '%00',
          `${real.slice(0, i)}%00${real.slice(i)}`,
          `%00${real}`,
          `${real}%00/${rng.hex(16)}`,
        ]);
      }
      case 'long':
        return rng.chance(0.5)
          ? `${rng.hex(40)}${`/${rng.hex(16)}`.repeat(200 + rng.int(300))}`
          : 'a'.repeat(4000 + rng.int(8000));
      case 'over-16k':
        return `${real}${`/${rng.hex(16)}`.repeat(1100)}`;
      case 'unicode': {
        const u = rng.pick(unicodeEncoded);
        const i = at(real);
        return rng.pick([`${real}${u}`, `${real.slice(0, i)}${u}${real.slice(i + 1)}`, u]);
      }
      case 'bad-percent': {
        const b = rng.pick(badPercent);
        const i = at(real);
        return rng.pick([`${real}${b}`, `${real.slice(0, i)}${b}${real.slice(i)}`, b]);
      }
      case 'verb':
        return `${real}${rng.pick([':requestGroupAccess', ':', ':accept', ':%00', ':lookupIdentity', '%3Aaccept', ':' + 'v'.repeat(300)])}`;
      case 'dots':
        return rng.pick(['..', '.', '%2e%2e', `${real}/..`, `${real}/./${rng.hex(16)}`, `../${real}`]);
      case 'slashes':
        return rng.pick([`${real}/`, real.replace('/', '//'), `/${real}`, `${real}//`]);
      case 'empty':
        return '';
      case 'uppercase':
        return real.toUpperCase();
    }
  })();
  return { value, label: `path:${kind}` };
}

/** A hostile value for a digest in a path ("sha256:<64 hex>"). */
export function mutateDigest(rng: Rng, real: string): Mutated {
  const kind = rng.pick(['fake', 'malformed', 'nul', 'unicode', 'bad-percent', 'long'] as const);
  const value = ((): string => {
    switch (kind) {
      case 'fake':
        return `sha256:${rng.hex(64)}`;
      case 'malformed':
        return rng.pick([
          'sha256:',
          'sha256',
          'md5:abc',
          `sha256:${rng.hex(63)}`,
          `SHA256:${rng.hex(64)}`,
          ':',
          `sha256%3A${rng.hex(64)}`,
        ]);
      case 'nul':
        return `${real}%00`;
      case 'unicode':
        return `${real}${rng.pick(unicodeEncoded)}`;
      case 'bad-percent':
        return `${real}${rng.pick(badPercent)}`;
      case 'long':
        return `sha256:${'a'.repeat(8000)}`;
    }
  })();
  return { value, label: `path-digest:${kind}` };
}

// ---------------------------------------------------------------------------------------------------------------
// Query strings

/** How a declared query parameter takes values; decides both the valid values and the hostile ones. */
export type QueryKind = 'int' | 'bool' | 'enum' | 'time' | 'uid' | 'uids' | 'mask' | 'page-token' | 'digest' | 'string';

export interface QueryParam {
  /** as declared (snake_case), with its camelCase alias if it has one */
  names: string[];
  kind: QueryKind;
  /** a valid value, already percent-encoded */
  valid: () => string;
  required?: boolean;
}

/** One name=value pair as it goes on the wire; value null sends the name alone. */
export type QueryPair = [string, string | null];

const enc = (s: string) => encodeURIComponent(s);

const unknownNames = [
  'foo',
  'page_sizee',
  'pagesize',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'valueOf',
  'uidp.unknown',
  'uidp.',
  'uidp',
  '.',
  'a[b]',
  'a[]',
  'filter',
  'fields',
  '%24where',
  '%00',
  'x%00y',
  '',
  '%ff',
  'name%00',
  'page%5Fsize',
  'PAGE_SIZE',
  'uidp.ids%5B%5D',
  // parameters of other operations (a list's parameters on a get, a create or a hand-written call)
  'uidp.ids',
  'uidp.descendants_of',
  'uidp.childrenOf',
  'uidp.in_root',
  'name',
  'id',
  'skip',
  'page_size',
  'pageToken',
  'order_by',
  'update_mask',
  'identity',
];

function hostileValue(rng: Rng, kind: QueryKind): Mutated {
  const choices: [number, string][] = [
    [kind === 'int' ? 6 : 1, 'huge-number'],
    [3, 'wrong-type'],
    [2, 'empty'],
    [2, 'nul'],
    [2, 'bad-percent'],
    [1.5, 'unicode'],
    [1, 'long'],
    [kind === 'uid' || kind === 'uids' ? 4 : 0.5, 'uid'],
    [kind === 'page-token' ? 4 : 0.3, 'page-token'],
    [kind === 'enum' ? 3 : 0.3, 'order-by'],
    [kind === 'mask' ? 4 : 0.3, 'mask'],
    [kind === 'time' ? 4 : 0.3, 'time'],
    [kind === 'bool' ? 3 : 0.3, 'bool'],
  ];
  const label = rng.weighted(choices);
  return { value: hostileQueryValue(rng, label), label: `query:${label}` };
}

/** A hostile value of the kind the label names. */
function hostileQueryValue(rng: Rng, label: string): string {
  switch (label) {
    case 'huge-number':
      return enc(rng.pick(hostileNumbers)).replace(/%25/g, '%');
    case 'wrong-type':
      return rng.pick(['abc', '%5B%5D', '%7B%7D', 'true', 'null', 'undefined', '1%2C2', '%22x%22', '-', '*']);
    case 'empty':
      return '';
    case 'nul':
      return rng.pick(['%00', `a%00b`, `${rng.hex(40)}%00`, '%00%00%00', '1%00']);
    case 'bad-percent':
      return rng.pick(badPercent);
    case 'unicode':
      return rng.pick(unicodeEncoded);
    case 'long':
      return 'a'.repeat(2000 + rng.int(10000));
    case 'uid':
      return rng.pick([
        fakeUid(rng),
        rng.hex(39),
        `${rng.hex(40)}%00`,
        `${rng.hex(40)}/`,
        'g'.repeat(40),
        `${rng.hex(40)},${rng.hex(40)}`,
        `${rng.hex(40)}%2C%2C`,
        '%2C',
        `${rng.hex(40)}%25`,
        `${rng.hex(40)}_%25`,
      ]);
    case 'page-token':
      return rng.pick([
        'abc',
        'a'.repeat(5000),
        enc(Buffer.from('{"k":1}').toString('base64')),
        'AAAA',
        '%00',
        '..',
        enc('eyJhbGciOiJub25lIn0.e30.'),
        '-_-_',
        '=',
      ]);
    case 'order-by':
      return rng.pick([
        'name%20desc%20desc',
        'nope',
        'uid%2Cname',
        'name%20DESC',
        '%20name',
        'created_at%20asc',
        'name%00',
        'uid%20desc%00',
        'name%09desc',
        '__proto__',
        'constructor',
      ]);
    case 'mask':
      return rng.pick([
        'name%2C',
        '*',
        'uid',
        'createTime',
        '__proto__',
        'a.b.c',
        'name%2Cname',
        '%2C',
        'name%00',
        'constructor.prototype',
        '*%2Cname',
        'name%20',
        'capabilities.0',
      ]);
    case 'time':
      return rng.pick([
        'yesterday',
        '9999-99-99',
        '1e99',
        '2026-13-01T00%3A00%3A00Z',
        '0',
        '-1',
        '2026-01-01',
        '2026-01-01T00%3A00%3A00%2B99%3A00',
        '275760-09-13T00%3A00%3A00Z',
        '%2B275760-09-13T00%3A00%3A00.000Z',
      ]);
    case 'bool':
      return rng.pick(['maybe', '2', 'TRUE', 'yes', '0', '1', 'false%00']);
  }
  return '';
}

/**
 * A query string for an operation: valid parameters picked from the declared ones, then, if `mutate`, one or two
 * hostile changes (a declared parameter's value, a repeated or unknown name, or broken syntax).
 */
export function queryString(rng: Rng, params: QueryParam[], mutate: boolean): Mutated<QueryPair[]> {
  const pairs: QueryPair[] = [];
  for (const p of params) {
    if (p.required ? rng.chance(0.9) : rng.chance(0.25)) pairs.push([rng.pick(p.names), p.valid()]);
  }
  if (!mutate) return { value: pairs, label: 'query:valid' };
  const labels: string[] = [];
  const changes = rng.chance(0.2) ? 2 : 1;
  for (let n = 0; n < changes; n++) {
    const kind = rng.weighted([
      [params.length > 0 ? 6 : 0, 'value'],
      [1.5, 'repeated'],
      [1.5, 'unknown-name'],
      [1, 'syntax'],
    ] as const);
    if (kind === 'value') {
      const p = rng.pick(params);
      const m = hostileValue(rng, p.kind);
      const name = rng.pick(p.names);
      const i = pairs.findIndex(([k]) => p.names.includes(k));
      if (i >= 0) pairs[i] = [name, m.value];
      else pairs.push([name, m.value]);
      labels.push(m.label);
    } else if (kind === 'repeated') {
      const p = params.length > 0 ? rng.pick(params) : undefined;
      const name = p ? rng.pick(p.names) : 'foo';
      pairs.push(
        [name, p ? p.valid() : '1'],
        [name, p && rng.chance(0.5) ? p.valid() : rng.pick(['2', '', '%00', '1e99', 'abc'])],
      );
      labels.push('query:repeated');
    } else if (kind === 'unknown-name') {
      pairs.push([rng.pick(unknownNames), rng.pick(['1', '', 'x', '%00', 'true'])]);
      labels.push('query:unknown-name');
    } else {
      // Broken syntax is appended as a pair whose name carries it (the whole query string is joined with &).
      pairs.push([rng.pick(['', '=', '==', '&', '%26', '?', '#', ';a=1', 'a=1=2', '%3D', '+', '%2B%2B']), null]);
      labels.push('query:syntax');
    }
  }
  return { value: pairs, label: labels.join(',') };
}

export function joinQuery(pairs: QueryPair[]): string {
  return pairs.map(([k, v]) => (v === null ? k : `${k}=${v}`)).join('&');
}

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies

/** JSON text inserted as it is (deep nesting, numbers JSON.stringify cannot write). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object written with exactly these entries, in order: keys JSON.stringify would drop (__proto__) or repeat. */
export class RawObject {
  constructor(readonly entries: [string, unknown][]) {}
}

/** Serializes a value that may contain RawJson and RawObject parts. Lone surrogates come out as \ud800 escapes. */
export function jsonText(v: unknown): string {
  if (v instanceof RawJson) return v.text;
  if (v instanceof RawObject) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') return jsonText(new RawObject(Object.entries(v)));
  return JSON.stringify(v) ?? 'null';
}

/** A minimal JSON schema, as the OpenAPI document has them. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  enum?: string[];
  pattern?: string;
  format?: string;
  required?: string[];
  maxLength?: number;
  readOnly?: boolean;
}

/** Examples for the patterns the spec uses; a pattern not here gets a plain word. */
const patternExamples: Record<string, string> = {
  '^[a-z0-9 ._-]{1,}$': 'fuzz name',
  '^[a-z0-9][a-z0-9._/-]{0,127}$': 'fuzz-repo',
  '^sha256:[a-f0-9]{64}$': `sha256:${'ab'.repeat(32)}`,
  '^-?[0-9]{1,12}(\\.[0-9]{1,9})?s$': '3600s',
  '^https?://\\S+$': 'http://127.0.0.1:9/fuzz',
  '^[0-9]{12}$': '123456789012',
  '^-?[0-9]{1,19}$': '42',
  '^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$': 'v1.0',
};

const typeOf = (s: Schema): string[] => (s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type]);

/** A plausible valid value for a schema; `refs` gives real uids for reference fields by name. */
export function exampleOf(rng: Rng, s: Schema, name: string, refs: Record<string, string>, depth = 0): unknown {
  if (refs[name] !== undefined) return refs[name];
  if (s.enum) return rng.pick(s.enum);
  if (s.pattern) return patternExamples[s.pattern] ?? 'fuzz';
  const types = typeOf(s);
  const scalar = scalarExample(rng, s, types);
  if (scalar !== undefined) return scalar;
  if (types.includes('array')) return depth > 3 || !s.items ? [] : [exampleOf(rng, s.items, name, refs, depth + 1)];
  if (types.includes('object') || s.properties) return objectExample(rng, s, refs, depth);
  return 'fuzz';
}

/** A string, number or boolean for a schema of that type; undefined for other types. */
function scalarExample(rng: Rng, s: Schema, types: string[]): string | number | boolean | undefined {
  if (types.includes('string'))
    return s.format === 'date-time' ? '2026-01-02T03:04:05.000Z' : rng.pick(['fuzz', 'fuzz value', 'x']);
  if (types.includes('integer') || types.includes('number')) return rng.int(100);
  if (types.includes('boolean')) return rng.chance(0.5);
  return undefined;
}

/** The required properties and some optional ones (never read-only ones), empty past a depth of 3. */
function objectExample(rng: Rng, s: Schema, refs: Record<string, string>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (depth > 3) return out;
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    if (p.readOnly) continue;
    if (s.required?.includes(k) || rng.chance(0.3)) out[k] = exampleOf(rng, p, k, refs, depth + 1);
  }
  if (typeof s.additionalProperties === 'object' && rng.chance(0.5))
    out.key = exampleOf(rng, s.additionalProperties, 'key', refs, depth + 1);
  return out;
}

const deepArrays = (n: number) => new RawJson(`${'['.repeat(n)}${']'.repeat(n)}`);
const deepObjects = (n: number) => new RawJson(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);

/** Values of the wrong JSON type for a schema. */
function wrongTyped(rng: Rng, s: Schema | undefined): unknown {
  const declared = s ? typeOf(s) : [];
  const all: [string, unknown][] = [
    ['integer', 0],
    ['integer', -1],
    ['number', 1.5],
    ['boolean', true],
    ['boolean', false],
    ['string', 'x'],
    ['string', ''],
    ['array', []],
    ['array', [1, 'a', null]],
    ['object', {}],
    ['object', { a: 1 }],
  ];
  const candidates = all.filter(([t]) => !declared.includes(t) && !(t === 'integer' && declared.includes('number')));
  return rng.pick(candidates.length > 0 ? candidates : all)[1];
}

const protoKeys = ['__proto__', 'constructor', 'prototype'];
function protoEntry(rng: Rng): [string, unknown] {
  const key = rng.pick(protoKeys);
  const value = rng.pick<unknown>([
    { polluted: true },
    new RawObject([['__proto__', { polluted: true }]]),
    { prototype: { polluted: true } },
    null,
    [],
    'x',
    1,
    {},
    new RawObject([['constructor', new RawObject([['prototype', { polluted: true }]])]]),
  ]);
  return [key, value];
}

export interface BodyContext {
  /** the valid body to start from */
  valid: unknown;
  schema?: Schema;
  /** real uids, by field name, for reference fields */
  refs: Record<string, string>;
}

export interface WireBody {
  /** undefined: no body */
  bytes?: Buffer;
  /** undefined: the default (application/json when there is a body) */
  contentType?: string;
}

const nonJson = [
  '{',
  '{"a":',
  'nul',
  "{'a':1}",
  '{"a":1,}',
  '<x/>',
  'a=1&b=2',
  '{"a":1} trailing',
  '1e400',
  '-',
  '"\\x"',
  '[1,]',
  '{"a" 1}',
  '\uFEFF{}',
  '{"a":01}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":undefined}',
  '"\\u12"',
  '{"a":"\n"}',
  '['.repeat(100),
];

const wrongContentTypes = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/jsonx',
  'application/*',
  'APPLICATION/JSON',
  '*/*',
  'application/merge-patch+json',
  'application/json, text/plain',
  'text/json',
  'application/xml',
  ';',
  'application/json; charset=%ff',
  'application/json;;;',
  'application/json; boundary="',
];

function objectOf(v: unknown): Record<string, unknown> {
  return v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    !(v instanceof RawJson) &&
    !(v instanceof RawObject)
    ? { ...(v as Record<string, unknown>) }
    : {};
}

/** A field of the body or its schema, and its schema. */
function someField(rng: Rng, body: Record<string, unknown>, schema: Schema | undefined): [string, Schema | undefined] {
  const names = [
    ...new Set([
      ...Object.keys(body),
      ...Object.keys(schema?.properties ?? {}).filter((k) => !schema!.properties![k].readOnly),
    ]),
  ];
  if (names.length === 0) return ['name', undefined];
  const name = rng.pick(names);
  return [name, schema?.properties?.[name]];
}

/** Fields whose values are objects (by schema or by value), to hide keys inside. */
function objectFields(body: Record<string, unknown>, schema: Schema | undefined): string[] {
  const bySchema = Object.entries(schema?.properties ?? {})
    .filter(([, s]) => typeOf(s).includes('object') || s.properties)
    .map(([k]) => k);
  const byValue = Object.entries(body)
    .filter(([, v]) => objectOf(v) === v || (v !== null && typeof v === 'object' && !Array.isArray(v)))
    .map(([k]) => k);
  return [...new Set([...bySchema, ...byValue])];
}

/** Fields that hold an int64 (a string of digits or an integer). */
function int64Fields(schema: Schema | undefined): string[] {
  return Object.entries(schema?.properties ?? {})
    .filter(([, s]) => s.pattern === '^-?[0-9]{1,19}$' || typeOf(s).includes('integer'))
    .map(([k]) => k);
}

/** Fields that name another record (roleUid, identityUid, defaultRole, ...) or are strings. */
function stringFields(
  body: Record<string, unknown>,
  schema: Schema | undefined,
  refs: Record<string, string>,
): string[] {
  const refFields = Object.keys(body).filter((k) => k in refs);
  if (refFields.length > 0) return refFields;
  const strings = Object.entries(schema?.properties ?? {})
    .filter(([, s]) => typeOf(s).includes('string') && !s.readOnly)
    .map(([k]) => k);
  return strings.length > 0 ? strings : ['name'];
}

const hugeString = (rng: Rng) => rng.pick(['a', 'é', '日', '\u{1F4A9}']).repeat(rng.pick([20_000, 70_000, 200_000]));

/** The kinds of body mutation, by weight (the order is part of the seed's sequence). */
const bodyMutationWeights = [
  [3, 'wrong-type'],
  [1.5, 'null-field'],
  [1, 'null'],
  [1, 'scalar'],
  [1.5, 'array'],
  [1.5, 'huge-string'],
  [0.4, 'over-1mib'],
  [2.5, 'deep-nesting'],
  [3, 'proto-key'],
  [3, 'proto-nested'],
  [2, 'lone-surrogate'],
  [3, 'nul'],
  [2, 'int64'],
  [1.5, 'unknown-field'],
  [1, 'duplicate-key'],
  [2.5, 'not-json'],
  [1, 'invalid-utf8'],
  [2, 'content-type'],
  [1, 'none'],
  [1, 'empty-object'],
  [1.5, 'enum'],
  [0.4, 'many-keys'],
  [0.4, 'long-key'],
  [0.5, 'big-array'],
  [1, 'number-forms'],
  [1, 'missing-required'],
] as const;
type BodyMutation = (typeof bodyMutationWeights)[number][1];

/** What a body mutator starts from: the valid body as a plain object, its schema and the real uids of reference fields. */
interface BodyInput {
  rng: Rng;
  body: Record<string, unknown>;
  schema?: Schema;
  refs: Record<string, string>;
}

const json = (v: unknown): WireBody => ({ bytes: Buffer.from(jsonText(v), 'utf8') });
const withField = (m: BodyInput, name: string, value: unknown) => json({ ...m.body, [name]: value });
const anyField = (m: BodyInput) => someField(m.rng, m.body, m.schema)[0];
/** One of `fields`, or any field when there are none. */
const oneOf = (m: BodyInput, fields: string[]) => (fields.length > 0 ? m.rng.pick(fields) : anyField(m));

/** One function per kind of body mutation: the valid body with that one hostile change, as it goes on the wire. */
const bodyMutators: Record<BodyMutation, (m: BodyInput) => WireBody> = {
  'wrong-type': (m) => {
    const [name, fs] = someField(m.rng, m.body, m.schema);
    return withField(m, name, wrongTyped(m.rng, fs));
  },
  'null-field': (m) => withField(m, anyField(m), null),
  null: () => json(new RawJson('null')),
  scalar: ({ rng }) => json(new RawJson(rng.pick(['"x"', '42', 'true', '""', '0', '-1', '1e99']))),
  array: (m) => {
    if (m.rng.chance(0.5)) return json(m.rng.pick([[m.body], [], [[]], [null]]));
    return withField(m, oneOf(m, objectFields(m.body, m.schema)), m.rng.pick([[], [{}], [m.body]]));
  },
  'huge-string': (m) => withField(m, anyField(m), hugeString(m.rng)),
  'over-1mib': (m) => withField(m, anyField(m), 'a'.repeat(1024 * 1024 + 10)),
  'deep-nesting': (m) => {
    const { rng } = m;
    const depth = rng.pick([10_000, 10_000, 10_000, 50_000]);
    const deep = rng.chance(0.5) ? deepArrays(depth) : deepObjects(depth);
    if (rng.chance(0.4)) return json(deep);
    const fields = objectFields(m.body, m.schema);
    return withField(m, fields.length > 0 && rng.chance(0.6) ? rng.pick(fields) : anyField(m), deep);
  },
  'proto-key': ({ rng, body }) => {
    const entries = Object.entries(body);
    entries.splice(rng.int(entries.length + 1), 0, protoEntry(rng));
    return json(new RawObject(entries));
  },
  'proto-nested': (m) => {
    const name = oneOf(m, objectFields(m.body, m.schema));
    const inner = Object.entries(objectOf(m.body[name]));
    inner.splice(m.rng.int(inner.length + 1), 0, protoEntry(m.rng));
    // Sometimes deeper still, or inside an array of objects.
    const nested = new RawObject(inner);
    return withField(m, name, m.rng.pick<unknown>([nested, [nested], new RawObject([['x', nested]])]));
  },
  'lone-surrogate': (m) => {
    const value = m.rng.pick(['\ud800', 'a\udfffb', '\udc00\ud800', `x${'\ud83d'}`]);
    if (m.rng.chance(0.25)) return json(new RawObject([...Object.entries(m.body), [value, 'x']]));
    return withField(m, m.rng.pick(stringFields(m.body, m.schema, m.refs)), value);
  },
  nul: (m) => {
    const name = m.rng.pick(stringFields(m.body, m.schema, m.refs));
    const real = typeof m.body[name] === 'string' ? (m.body[name] as string) : 'x';
    return withField(
      m,
      name,
      m.rng.pick([`${real}\u0000`, '\u0000', `${real.slice(0, 5)}\u0000${real.slice(5)}`, `\u0000${real}`]),
    );
  },
  int64: (m) =>
    withField(
      m,
      oneOf(m, int64Fields(m.schema)),
      m.rng.pick<unknown>([
        '99999999999999999999',
        '-9223372036854775809',
        '9223372036854775808',
        new RawJson('1e99'),
        new RawJson('9007199254740993'),
        new RawJson('-9223372036854775809'),
        new RawJson('1e400'),
        '0x10',
        '1e5',
        ' 1',
        '',
        '-0',
        '1.0',
      ]),
    ),
  'unknown-field': ({ rng, body }) =>
    json({
      ...body,
      [rng.pick([
        'fuzzUnknown',
        '',
        ' ',
        'a.b',
        '$where',
        'toString',
        'hasOwnProperty',
        'valueOf',
        'uid',
        'createTime',
      ])]: rng.pick([1, 'x', null, {}]),
    }),
  'duplicate-key': (m) => {
    const name = anyField(m);
    return json(new RawObject([...Object.entries(m.body), [name, m.rng.pick<unknown>([1, null, {}, [], 'dup'])]]));
  },
  'not-json': ({ rng }) => ({ bytes: Buffer.from(rng.pick(nonJson), 'utf8') }),
  'invalid-utf8': (m) => {
    const text = jsonText({ ...m.body, [anyField(m)]: '@@BYTES@@' });
    const [before, after] = text.split('@@BYTES@@');
    return {
      bytes: Buffer.concat([
        Buffer.from(before),
        Buffer.from(m.rng.pick([[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xfe, 0xff], [0xc0, 0xaf]])),
        Buffer.from(after),
      ]),
    };
  },
  'content-type': ({ rng, body }) => ({ ...json(body), contentType: rng.pick(wrongContentTypes) }),
  none: () => ({}),
  'empty-object': () => json({}),
  enum: (m) => {
    const enums = Object.entries(m.schema?.properties ?? {}).filter(([, p]) => p.enum || p.items?.enum);
    if (enums.length === 0) return withField(m, anyField(m), 'NOT_A_DECLARED_VALUE');
    const [name, p] = m.rng.pick(enums);
    const bad = m.rng.pick([
      'NOT_A_DECLARED_VALUE',
      '',
      (p.enum ?? p.items!.enum!)[0].toLowerCase(),
      0,
      '__proto__',
      'constructor',
      'toString',
    ]);
    return withField(m, name, p.items ? [bad] : bad);
  },
  'many-keys': () => json(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]))),
  'long-key': ({ body }) => json({ ...body, ['k'.repeat(100_000)]: 1 }),
  'big-array': (m) => {
    // Arrays of enums are where one violation per element costs most.
    const arrays = Object.entries(m.schema?.properties ?? {})
      .filter(([, p]) => typeOf(p).includes('array'))
      .map(([k]) => k);
    const name = arrays.length > 0 && m.rng.chance(0.7) ? m.rng.pick(arrays) : anyField(m);
    return withField(
      m,
      name,
      Array.from({ length: 100_000 }, (_, i) => (m.rng.chance(0.5) ? i : `X${i}`)),
    );
  },
  'number-forms': (m) =>
    withField(
      m,
      anyField(m),
      new RawJson(m.rng.pick(['-0', '1e-400', '1E+2', '0.0000001', '-1e308', '1.7976931348623157e309'])),
    ),
  'missing-required': ({ rng, body, schema }) => {
    const copy = { ...body };
    for (const k of schema?.required ?? Object.keys(copy).slice(0, 1)) if (rng.chance(0.7)) delete copy[k];
    return json(copy);
  },
};

/**
 * A request body: the valid one with one hostile change. The bytes are sent as they are, so they may be invalid
 * JSON or invalid UTF-8.
 */
export function mutateBody(rng: Rng, ctx: BodyContext): Mutated<WireBody> {
  const body = objectOf(ctx.valid);
  const kind = rng.weighted(bodyMutationWeights);
  return { value: bodyMutators[kind]({ rng, body, schema: ctx.schema, refs: ctx.refs }), label: `body:${kind}` };
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens

const b64url = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** An Authorization header value that is not a valid token of this server. */
export function garbageAuthorization(rng: Rng, ownerToken: string, ownerUid: string): string {
  const [h, p, sig] = ownerToken.split('.');
  return rng.pick([
    'Bearer',
    'Bearer ',
    'Bearer x',
    'Basic dXNlcjpwYXNz',
    `Bearer ${ownerToken.slice(0, -2)}${ownerToken.endsWith('A') ? 'BB' : 'AA'}`,
    `Bearer ${'a'.repeat(8000)}`,
    `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: ownerUid, exp: 4102444800 })}.`,
    `Bearer ${ownerToken} extra`,
    `Bearer ${h}.${p}`,
    `Bearer ${h}..${sig}`,
    `Bearer ${b64url({ alg: 'HS256' })}.${p}.${sig}`,
    `Bearer ${h}.${b64url({ sub: ownerUid, exp: 4102444800, iat: 0 })}.${sig}`,
    `Bearer ${ownerToken}${ownerToken}`,
    'Bearer \u00ff\u00fe',
    'Bearer null',
    'Bearer undefined',
    `Token ${ownerToken}`,
    `Bearer  ${ownerToken}`,
    'Bearer a.b.c',
    `Bearer ${h}.${b64url('not json')}.${sig}`,
  ]);
}

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP requests (what Node's parser refuses before Koa runs)

export interface RawCase {
  label: string;
  /** the bytes sent on a fresh connection */
  bytes: Buffer;
}

/** Requests that only a raw socket can send, each on its own connection; `path` is a route that exists. */
export function rawCases(path: string, authorization: string): RawCase[] {
  const auth = `Authorization: ${authorization}\r\n`;
  const lines = (...parts: (string | Buffer)[]) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));
  const get = (target: string | Buffer, extra = '') =>
    lines('GET ', target, ` HTTP/1.1\r\nHost: fuzz\r\n${auth}${extra}Connection: close\r\n\r\n`);
  const post = (headers: string, body: string | Buffer) =>
    lines(`POST ${path} HTTP/1.1\r\nHost: fuzz\r\n${auth}${headers}Connection: close\r\n\r\n`, body);
  return [
    {
      label: 'raw:non-utf8-byte-in-path',
      bytes: get(Buffer.concat([Buffer.from('/registry/v2/repos/'), Buffer.from([0xff])])),
    },
    {
      label: 'raw:non-utf8-byte-in-query',
      bytes: get(Buffer.concat([Buffer.from(`${path}?name=`), Buffer.from([0xff, 0xfe])])),
    },
    {
      label: 'raw:utf8-bytes-in-path',
      bytes: get(Buffer.concat([Buffer.from('/registry/v2/repos/'), Buffer.from('日本', 'utf8')])),
    },
    { label: 'raw:control-char-in-path', bytes: get(Buffer.from('/registry/v2/repos/\x01\x7f', 'latin1')) },
    { label: 'raw:headers-over-16k', bytes: get(path, `X-Fill: ${'a'.repeat(17_000)}\r\n`) },
    {
      label: 'raw:many-headers-over-16k',
      bytes: get(path, Array.from({ length: 200 }, (_, i) => `X-H${i}: ${'b'.repeat(90)}\r\n`).join('')),
    },
    { label: 'raw:url-over-16k', bytes: get(`${path}?name=${'c'.repeat(17_000)}`) },
    { label: 'raw:garbage-request-line', bytes: lines('GARBAGE\r\n\r\n') },
    { label: 'raw:request-line-extra-token', bytes: lines(`GET ${path} HTTP/1.1 extra\r\nHost: fuzz\r\n\r\n`) },
    { label: 'raw:unknown-http-version', bytes: lines(`GET ${path} HTTP/9.9\r\nHost: fuzz\r\n\r\n`) },
    { label: 'raw:unknown-method', bytes: lines(`FUZZ ${path} HTTP/1.1\r\nHost: fuzz\r\n\r\n`) },
    { label: 'raw:lowercase-method', bytes: lines(`get ${path} HTTP/1.1\r\nHost: fuzz\r\n\r\n`) },
    { label: 'raw:double-space-request-line', bytes: lines(`GET  ${path} HTTP/1.1\r\nHost: fuzz\r\n\r\n`) },
    { label: 'raw:http-0.9-request-line', bytes: lines(`GET ${path}\r\n\r\n`) },
    { label: 'raw:header-without-colon', bytes: get(path, 'BadHeader\r\n') },
    { label: 'raw:space-in-header-name', bytes: get(path, 'Bad Header: x\r\n') },
    { label: 'raw:nul-in-header-value', bytes: get(path, 'X-Fuzz: a\x00b\r\n') },
    { label: 'raw:missing-host', bytes: lines(`GET ${path} HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`) },
    {
      label: 'raw:invalid-content-length',
      bytes: post('Content-Type: application/json\r\nContent-Length: abc\r\n', '{}'),
    },
    {
      label: 'raw:huge-content-length',
      bytes: post('Content-Type: application/json\r\nContent-Length: 99999999999999999999\r\n', '{}'),
    },
    {
      label: 'raw:two-content-lengths',
      bytes: post('Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n', '{}'),
    },
    {
      label: 'raw:content-length-and-chunked',
      bytes: post(
        'Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n',
        '2\r\n{}\r\n0\r\n\r\n',
      ),
    },
    {
      label: 'raw:bad-chunk-size',
      bytes: post('Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n', 'zz\r\n{}\r\n0\r\n\r\n'),
    },
    {
      label: 'raw:unknown-transfer-encoding',
      bytes: post('Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n', '{}'),
    },
    {
      label: 'raw:expect-unknown',
      bytes: post('Content-Type: application/json\r\nContent-Length: 2\r\nExpect: fuzz\r\n', '{}'),
    },
    { label: 'raw:connect-method', bytes: lines('CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n') },
    { label: 'raw:asterisk-target', bytes: lines('OPTIONS * HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n') },
    { label: 'raw:relative-target', bytes: get(path.slice(1)) },
    { label: 'raw:absolute-target', bytes: get(`http://fuzz${path}`) },
    { label: 'raw:obs-fold-header', bytes: get(path, 'X-Fuzz: a\r\n folded\r\n') },
    {
      label: 'raw:non-utf8-json-body',
      bytes: post(
        'Content-Type: application/json\r\nContent-Length: 12\r\n',
        Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
      ),
    },
  ];
}
