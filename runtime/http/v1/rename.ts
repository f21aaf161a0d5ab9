// Renaming between v2 and v1, as the spec declares it (a resource's `v1:` block): field names, also inside
// nested objects, enum values v1 spells differently, and capability enum names to and from their dotted form.
import { invalidArgument, type FieldViolation } from '../../model/errors.js';
import type { ApiModel, FieldModel, ResourceModel } from '../../model/api-model.js';
import type { Row } from '../../model/records.js';

/** One level of renaming: field names, enum values, and the levels of nested objects. */
interface Level {
  names: Record<string, string>;
  values: Record<string, Record<string, string>>;
  nested: Record<string, Level>;
  /** Renaming into v2: the values already spelled as v2 spells them, accepted as they are. */
  accepted?: Record<string, Set<string>>;
}

const emptyLevel = (): Level => ({ names: {}, values: {}, nested: {} });

function levelAt(root: Level, path: string[]): Level {
  return path.reduce((level, name) => (level.nested[name] ??= emptyLevel()), root);
}

const invertMap = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).map(([a, b]) => [b, a]));

/** The same renames the other way: keys become v1 names. */
function invert(level: Level): Level {
  const v1 = (k: string) => level.names[k] ?? k;
  return {
    names: invertMap(level.names),
    values: Object.fromEntries(Object.entries(level.values).map(([k, m]) => [v1(k), invertMap(m)])),
    accepted: Object.fromEntries(Object.entries(level.values).map(([k, m]) => [v1(k), new Set(Object.keys(m))])),
    nested: Object.fromEntries(Object.entries(level.nested).map(([k, l]) => [v1(k), invert(l)])),
  };
}

/** A table's own entry for a key from a request: never an Object.prototype member ("constructor", "toString"). */
const own = <T>(table: Record<string, T> | undefined, key: string): T | undefined =>
  table && Object.hasOwn(table, key) ? table[key] : undefined;

/**
 * Renames a value; `accepted` (requests only) notes in `problems` an enum value that is in neither spelling,
 * naming v1's, and leaves it as it is for validation to refuse.
 */
function rename(
  value: unknown,
  level: Level | undefined,
  values: Record<string, string> | undefined,
  path: string,
  accepted?: Set<string>,
  problems: FieldViolation[] = [],
): unknown {
  if (Array.isArray(value)) return value.map((v, i) => rename(v, level, values, `${path}[${i}]`, accepted, problems));
  if (values && typeof value === 'string') {
    if (accepted && own(values, value) === undefined && !accepted.has(value)) {
      const names = Object.keys(values);
      const choices =
        names.length > 8 ? `a known name such as ${names.slice(0, 3).join(', ')}` : `one of ${names.join(', ')}`;
      problems.push({ field: path, description: `${path} must be ${choices}; "${value}" is not` });
    }
    return own(values, value) ?? value;
  }
  if (!level || value === null || typeof value !== 'object') return value;
  const out: Row = {};
  for (const [k, v] of Object.entries(value)) {
    out[own(level.names, k) ?? k] = rename(
      v,
      own(level.nested, k),
      own(level.values, k),
      path ? `${path}.${k}` : k,
      own(level.accepted, k),
      problems,
    );
  }
  return out;
}

/**
 * Renames between v2 and v1: field names (also inside nested objects), enum values v1 spells differently, and
 * capability enum names to and from their dotted form.
 */
export class V1Shape {
  private readonly toV1: Level = emptyLevel();
  private readonly toV2: Level;

  constructor(r: ResourceModel, model: ApiModel) {
    for (const [path, name] of Object.entries(r.v1!.fields)) {
      const parts = path.split('.');
      levelAt(this.toV1, parts.slice(0, -1)).names[parts[parts.length - 1]] = name;
    }
    for (const [path, values] of Object.entries(r.v1!.values)) {
      const parts = path.split('.');
      levelAt(this.toV1, parts.slice(0, -1)).values[parts[parts.length - 1]] = values;
    }
    const isCapabilityEnum = (f: FieldModel) =>
      f.type === 'enum' && !!f.values?.length && f.values.every((v) => v in model.capabilities);
    const dotted = Object.fromEntries(Object.entries(model.capabilities).map(([name, c]) => [name, c.v1]));
    for (const [k, f] of Object.entries(r.fields)) if (isCapabilityEnum(f)) this.toV1.values[k] = dotted;
    this.toV2 = invert(this.toV1);
  }

  out(record: Row): Row {
    return rename(record, this.toV1, undefined, '') as Row;
  }

  /** A v1 body in v2's names, and what could not be translated (for the validation step to report). */
  translate(body: Row): { data: Row; problems: FieldViolation[] } {
    const problems: FieldViolation[] = [];
    return { data: rename(body, this.toV2, undefined, '', undefined, problems) as Row, problems };
  }

  /** A v1 body in v2's names; INVALID_ARGUMENT for what cannot be translated. */
  in(body: Row): Row {
    const { data, problems } = this.translate(body);
    if (problems.length > 0) throw invalidArgument(problems);
    return data;
  }
}
