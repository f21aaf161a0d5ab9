// The schema modes of generator/json-schema.ts, run through AJV with real data: `input` (request bodies),
// `output` (what the server returns, in the OpenAPI document) and `record` (stored records, as the import loads them).
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { int64Text, objectSchema, type JsonSchema, type SchemaMode } from '../generator/json-schema.js';
import { standardFields, type FieldModel } from '../runtime/model/api-model.js';

// Configured as generator/emit-validators.ts configures the validators it emits.
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats.default(ajv, ['date-time']);
ajv.addFormat('int64', new RegExp(int64Text));

const fields: Record<string, FieldModel> = {
  ...standardFields, // uid, createTime, updateTime: output-only
  name: { type: 'string', required: true, pattern: '^[a-z]+$' },
  secret: { type: 'string', inputOnly: true },
  reviewer: { type: 'string', outputOnly: true, required: true },
  size: { type: 'int64' },
  floor: { type: 'int64', minimum: 0 },
  weight: { type: 'int32' },
  colour: { type: 'enum', values: ['RED', 'GREEN'] },
  labels: { type: 'map', mapValue: { type: 'string' } },
  limits: {
    type: 'map',
    mapValue: { type: 'object', fields: { max: { type: 'int32' }, key: { type: 'string', inputOnly: true } } },
  },
  owner: {
    type: 'object',
    fields: {
      email: { type: 'string' },
      token: { type: 'string', inputOnly: true },
      verifiedTime: { type: 'timestamp', outputOnly: true },
    },
  },
  contact: { type: 'object', fields: { email: { type: 'string', required: true }, phone: { type: 'string' } } },
  tags: { type: 'string', repeated: true, required: true },
  notes: { type: 'string', repeated: true },
};

/** The problems AJV finds, each as "<field path> <keyword>", sorted: a field that passes has none. */
function validator(mode: SchemaMode, requireFields: boolean): (data: unknown) => string[] {
  const validate = ajv.compile(objectSchema(fields, mode, requireFields));
  return (data) => {
    if (validate(data)) return [];
    const where = (e: NonNullable<typeof validate.errors>[number]) =>
      e.keyword === 'required'
        ? `${e.instancePath}/${e.params.missingProperty}`
        : e.keyword === 'additionalProperties'
          ? `${e.instancePath}/${e.params.additionalProperty}`
          : e.instancePath;
    return [...new Set(validate.errors!.map((e) => `${where(e)} ${e.keyword}`))].sort();
  };
}

const create = validator('input', true);
const update = validator('input', false);
const output = validator('output', false);
const record = validator('record', true);
const minimal = { name: 'a', tags: ['x'] };
const stored = {
  ...minimal,
  reviewer: 'r',
  uid: 'u',
  createTime: '2025-01-02T03:04:05Z',
  updateTime: '2025-01-02T03:04:05.123Z',
};

test('input: output-only fields are tolerated whatever their value, input-only ones taken, unknown ones refused', () => {
  const echoed = { uid: 42, createTime: 'yesterday', updateTime: null, reviewer: { any: 1 } };
  assert.equal(create({ ...minimal, ...echoed, secret: 's' }), []);
  assert.equal(update({ ...echoed, secret: 's' }), []);
  assert.equal(
    create({ ...minimal, owner: { email: 'e', token: 't', verifiedTime: 'whenever' } }),
    [],
    'inside an object too',
  );
  assert.equal(create({ ...minimal, extra: 1, owner: { nope: true } }), [
    '/extra additionalProperties',
    '/owner/nope additionalProperties',
  ]);
  assert.equal(update({ secret: 7 }), ['/secret type'], 'an input-only field is checked');
});

test('output: input-only fields absent, output-only ones checked and marked read-only, unknown ones allowed', () => {
  const schema = objectSchema(fields, 'output', false) as { properties: Record<string, JsonSchema> };
  assert.not.ok('secret' in schema.properties);
  assert.not.ok('token' in (schema.properties.owner.properties as object));
  assert.not.ok('key' in ((schema.properties.limits.additionalProperties as JsonSchema).properties as object));
  assert.is(schema.properties.reviewer.readOnly, true);
  assert.equal(
    output({
      ...stored,
      secret: 'never described',
      extra: 1,
      owner: { email: 'e', verifiedTime: '2025-01-02T03:04:05Z', added: true },
    }),
    [],
  );
  assert.equal(output({ uid: 42, createTime: 'yesterday', owner: { verifiedTime: 'soon' } }), [
    '/createTime format',
    '/owner/verifiedTime format',
    '/uid type',
  ]);
});

test('record: every declared field is checked, output-only ones included; unknown ones refused', () => {
  assert.equal(
    record({ ...stored, secret: 's', owner: { email: 'e', token: 't', verifiedTime: '2025-01-02T03:04:05Z' } }),
    [],
  );
  assert.equal(
    record({ ...stored, uid: 42, createTime: 'yesterday', extra: 1, owner: { verifiedTime: 'soon', nope: 1 } }),
    [
      '/createTime format',
      '/extra additionalProperties',
      '/owner/nope additionalProperties',
      '/owner/verifiedTime format',
      '/uid type',
    ],
  );
});

test('required fields are required only when asked, and an output-only one only where the server writes it', () => {
  assert.equal(create({}), ['/name required', '/tags required']);
  assert.equal(record({}), ['/name required', '/reviewer required', '/tags required']);
  assert.equal(validator('output', true)({}), ['/name required', '/reviewer required', '/tags required']);
  for (const [mode, check] of [
    ['input', update],
    ['output', output],
    ['record', validator('record', false)],
  ] as const) {
    assert.equal(check({}), [], `${mode} without requireFields`);
  }
});

test('a required repeated field needs an item wherever it is taken in; other lists may be empty', () => {
  assert.equal(create({ ...minimal, tags: [] }), ['/tags minItems']);
  assert.equal(update({ tags: [] }), ['/tags minItems'], 'an update cannot empty it either');
  assert.equal(record({ ...stored, tags: [] }), ['/tags minItems']);
  assert.equal(output({ tags: [], notes: [] }), []);
  assert.equal(create({ ...minimal, notes: [] }), []);
  assert.equal(create({ ...minimal, tags: ['x', 1] }), ['/tags/1 type']);
});

test('int64: decimal text across the whole range or an exact number in, text only out', () => {
  const accepted = [
    '9223372036854775807',
    '-9223372036854775808',
    '007',
    '-0',
    '0',
    12,
    -12,
    0,
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
  ];
  const refused: [unknown, string][] = [
    ['9223372036854775808', 'format'],
    ['-9223372036854775809', 'format'],
    ['99999999999999999999', 'format'],
    ['1.5', 'format'],
    [' 1', 'format'],
    ['+1', 'format'],
    ['', 'format'],
    ['0x10', 'format'],
    ['1e3', 'format'],
    [1.5, 'type'],
    [2 ** 53, 'maximum'],
    [-(2 ** 53), 'minimum'],
    [true, 'type'],
  ];
  for (const check of [update, record]) {
    for (const size of accepted)
      assert.equal(
        check({ ...stored, size }).filter((p) => p.startsWith('/size')),
        [],
        `${JSON.stringify(size)} accepted`,
      );
    for (const [size, keyword] of refused)
      assert.ok(
        check({ ...stored, size }).includes(`/size ${keyword}`),
        `${JSON.stringify(size)} refused by ${keyword}`,
      );
  }
  assert.equal(update({ floor: -1 }), ['/floor minimum'], 'a declared bound applies to a number');
  assert.equal(output({ size: '9223372036854775807' }), []);
  assert.equal(output({ size: 12 }), ['/size type'], 'always a string out');
  assert.equal(output({ size: 'twelve' }), ['/size format']);
});

test('int32 stays within 32 bits and is a number', () => {
  assert.equal(update({ weight: 2147483647 }), []);
  assert.equal(update({ weight: -2147483648 }), []);
  assert.equal(update({ weight: 2147483648 }), ['/weight maximum']);
  assert.equal(update({ weight: -2147483649 }), ['/weight minimum']);
  assert.equal(update({ weight: '1' }), ['/weight type']);
  assert.equal(update({ weight: 1.5 }), ['/weight type']);
});

test('enums take their declared values alone, in every mode', () => {
  for (const [mode, check] of [
    ['input', update],
    ['output', output],
    ['record', record],
  ] as const) {
    assert.equal(check({ ...stored, colour: 'GREEN' }), [], mode);
    assert.equal(check({ ...stored, colour: 'BLUE' }), ['/colour enum'], mode);
    assert.equal(check({ ...stored, colour: 'red' }), ['/colour enum'], `${mode}: case counts`);
  }
});

test('maps take any key, and their values as declared in each mode', () => {
  assert.equal(update({ labels: { a: 'b', 'x.y/z': '' } }), []);
  assert.equal(update({ labels: { a: 1 } }), ['/labels/a type']);
  assert.equal(output({ labels: { a: 1 } }), ['/labels/a type']);
  assert.equal(update({ limits: { cpu: { max: 2, key: 'k' } } }), []);
  assert.equal(update({ limits: { cpu: { max: 2.5, other: 1 } } }), [
    '/limits/cpu/max type',
    '/limits/cpu/other additionalProperties',
  ]);
  assert.equal(output({ limits: { cpu: { max: 2, other: 1 } } }), []);
});

test('a nested object given in a request or a record is given whole: its required fields are required', () => {
  for (const [mode, check] of [
    ['create', create],
    ['update', update],
    ['record', record],
  ] as const) {
    assert.equal(
      check({ ...(mode === 'record' ? stored : minimal), contact: { phone: 'p' } }),
      ['/contact/email required'],
      mode,
    );
    assert.equal(check({ ...(mode === 'record' ? stored : minimal), contact: { email: 'e' } }), [], mode);
  }
  assert.equal(output({ ...stored, contact: {} }), [], 'answers are not held to it');
});

test.run();
