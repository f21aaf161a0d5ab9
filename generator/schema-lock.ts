// spec/schema.lock.json: the stored shape the spec last had, committed with it. Each field's column and type,
// whether it is required, and the changes old rows go through; the columns the spec no longer reads. The lock
// decides columns: a new field gets a new column (never a removed field's, whose values it would resurrect), a
// field whose type changes gets a new column filled from the old one as the spec declares (existingRows), a
// renamed field (renamedFrom) a new column copied from the old. An enum's values are recorded (a scalar's, a
// list's held in one JSON column, and, by dotted path, those inside a JSON column's objects, lists of objects and
// maps): one removed over stored rows needs the value they take (renamedValues), given in place, inside the
// stored JSON too. A change of what stored columns mean needs a higher schemaVersion than the
// lock's: forgetting to raise it is an error that names the version to raise to.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// The entity's default column name (generator/emit-typescript.ts): a field whose column is it needs no `column`.
import { snake as snakeCase } from './emit-typescript.js';
import type { ApiModel, FieldModel, ResourceModel, StoredChange } from '../runtime/model/api-model.js';

interface LockedField {
  column: string;
  type: string;
  required?: true;
  /** an enum's declared values (a scalar's or a list's): a stored row may hold any of them */
  values?: string[];
  /** the values of each enum inside the JSON column, by dotted path ("oidc.correlationRule"; a map's value: *) */
  nestedValues?: Record<string, string[]>;
  changes?: StoredChange[];
}
interface LockedTable {
  fields: Record<string, LockedField>;
  retired?: Record<string, { field: string; type: string }>;
}
export interface SchemaLock {
  schemaVersion: number;
  tables: Record<string, LockedTable>;
}

export const lockFile = 'schema.lock.json';

/** The type a column holds: nested shapes are one JSON column, whatever their fields. */
const storedType = (f: FieldModel) => (f.repeated ? `${f.type}[]` : f.type);

/** An enum, stored as its value's text or, a list of values, as one JSON column: the values are followed alike. */
const declaredEnum = (f: FieldModel) => f.type === 'enum' && Array.isArray(f.values);

/** An enum a stored value holds: the field's own (path: its name), or one inside its JSON, and where it is declared. */
interface StoredEnum {
  f: FieldModel;
  path: string;
  where: string;
}

/** The enums of a field's stored value, by dotted path: through nested objects (lists alike) and map values (*). */
function storedEnums(f: FieldModel, path: string, where: string): StoredEnum[] {
  const inner = Object.entries(f.fields ?? {}).flatMap(([name, g]) =>
    storedEnums(g, `${path}.${name}`, `${where}/fields/${name}`),
  );
  const mapped = f.mapValue ? storedEnums(f.mapValue, `${path}.*`, `${where}/mapValue`) : [];
  return [...(declaredEnum(f) ? [{ f, path, where }] : []), ...inner, ...mapped];
}

export function readSchemaLock(specDir: string): SchemaLock | undefined {
  const file = join(specDir, lockFile);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SchemaLock) : undefined;
}

/** Writes the lock when it changed (the author commits it); true when it did. */
export function writeSchemaLock(specDir: string, model: ApiModel): boolean {
  const text = `${JSON.stringify(lockOf(model), null, 2)}\n`;
  const file = join(specDir, lockFile);
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return false;
  writeFileSync(file, text);
  return true;
}

function lockOf(model: ApiModel): SchemaLock {
  const tables: Record<string, LockedTable> = {};
  for (const r of Object.values(model.resources).sort((a, b) => (a.collection < b.collection ? -1 : 1))) {
    const fields: Record<string, LockedField> = {};
    for (const name of Object.keys(r.fields).sort()) {
      const f = r.fields[name];
      const nested = storedEnums(f, name, '').filter((e) => e.path !== name);
      fields[name] = {
        column: f.column ?? snakeCase(name),
        type: storedType(f),
        ...(f.required ? { required: true as const } : {}),
        ...(declaredEnum(f) ? { values: f.values } : {}),
        ...(nested.length > 0 ? { nestedValues: Object.fromEntries(nested.map((e) => [e.path, e.f.values!])) } : {}),
        ...(f.changes ? { changes: f.changes } : {}),
      };
    }
    tables[r.collection] = { fields, ...(r.retired ? { retired: r.retired } : {}) };
  }
  return { schemaVersion: model.schemaVersion, tables };
}

/**
 * Gives each field its column and the changes its old rows go through, from the lock and the spec's
 * declarations; `at` names where a collection is declared ("file: /resources/N").
 */
export function applySchemaLock(
  model: ApiModel,
  lock: SchemaLock | undefined,
  at: (collection: string) => string,
  problems: string[],
  vocabularyAt: string,
): void {
  for (const r of Object.values(model.resources)) {
    const locked = lock?.tables[r.collection];
    const where = `${at(r.collection)}/fields`;
    // A table the lock does not know is new: every field gets its own name's column.
    if (locked) followLock(r, locked, model, lock!.schemaVersion, { where, vocabularyAt }, problems);
  }
}

/** A column name no field or retired field of the table has: `base`, else `base_v<version>`, `..._2`, ... */
function freshColumn(taken: Set<string>, base: string, version: number): string {
  let column = taken.has(base) ? `${base}_v${version}` : base;
  for (let n = 2; taken.has(column); n++) column = `${base}_v${version}_${n}`;
  taken.add(column);
  return column;
}

function setColumn(f: FieldModel, name: string, column: string): void {
  if (column !== snakeCase(name)) f.column = column;
}

interface Following {
  version: number;
  lockedVersion: number;
  taken: Set<string>;
  problems: string[];
  /** the capability vocabulary: a field of values $capabilities takes its renames from access.yaml */
  capabilities: string[];
  /** where access.yaml declares them ("file: /renamedCapabilities") */
  vocabularyAt: string;
}

const raise = (x: Following) =>
  `raise schemaVersion in api.yaml to ${x.lockedVersion + 1} (${lockFile} records version ${x.lockedVersion})`;

function followLock(
  r: ResourceModel,
  locked: LockedTable,
  model: ApiModel,
  lockedVersion: number,
  { where: at, vocabularyAt }: { where: string; vocabularyAt: string },
  problems: string[],
): void {
  const retired = { ...locked.retired };
  const taken = new Set([...Object.values(locked.fields).map((f) => f.column), ...Object.keys(retired)]);
  const version = model.schemaVersion;
  const capabilities = Object.keys(model.capabilities);
  const x: Following = { version, lockedVersion, taken, problems, capabilities, vocabularyAt };
  // A field the spec no longer has (removed, or renamed) keeps its column and values; no new field reuses it.
  for (const [name, old] of Object.entries(locked.fields))
    if (!(name in r.fields)) retired[old.column] = { field: name, type: old.type };
  for (const [name, f] of Object.entries(r.fields)) {
    const old = locked.fields[name];
    if (old) followField(name, f, old, retired, `${at}/${name}`, x);
    else if (f.renamedFrom) renameOver(r, name, f, locked, `${at}/${name}`, x);
    else setColumn(f, name, freshColumn(taken, snakeCase(name), version));
  }
  if (Object.keys(retired).length > 0) r.retired = Object.fromEntries(Object.entries(retired).sort());
}

/** A field the lock has: its column, and a new one when its type changes; a change of required-ness recorded. */
function followField(
  name: string,
  f: FieldModel,
  old: LockedField,
  retired: NonNullable<ResourceModel['retired']>,
  where: string,
  x: Following,
): void {
  setColumn(f, name, old.column);
  const changes = [...(old.changes ?? [])].map((c) => ({ ...c }));
  const latest = changes.at(-1);
  // A change made at this version, not yet released, is the spec's to amend (its declaration).
  const amending = latest !== undefined && latest.since === x.version;
  if (old.type !== storedType(f)) {
    if (x.version <= x.lockedVersion)
      x.problems.push(`${where}: its type changes from ${old.type} to ${storedType(f)}: ${raise(x)}`);
    else if (!f.existingRows)
      x.problems.push(
        `${where}: its type changes from ${old.type} to ${storedType(f)} over stored rows: declare existingRows: ` +
          'convert (each value converted; one that does not stops the migration), { default: V } or clear',
      );
    else {
      setColumn(f, name, freshColumn(x.taken, snakeCase(name), x.version));
      retired[old.column] = { field: name, type: old.type };
      const before = [old.column, ...changes.flatMap((c) => c.from ?? [])];
      changes.push({ since: x.version, kind: 'type', from: [...new Set(before)], rows: f.existingRows });
    }
  } else if (amending && latest.kind !== 'required' && f.existingRows) latest.rows = f.existingRows;
  const required = changes.find((c) => c.kind === 'required' && c.since === x.version);
  if (f.required && !old.required) {
    if (x.version <= x.lockedVersion) x.problems.push(`${where}/required: it is now required: ${raise(x)}`);
    else if (f.existingRows !== 'clear' && typeof f.existingRows !== 'object')
      x.problems.push(
        `${where}/required: rows stored before may lack it: declare existingRows: { default: V } (old rows ` +
          'get V) or clear (old rows stay without it until a change sets it)',
      );
    else changes.push({ since: x.version, kind: 'required', rows: f.existingRows });
  } else if (required && f.existingRows && f.existingRows !== 'convert') required.rows = f.existingRows;
  if (old.type === storedType(f)) followEnums(f, name, old, changes, where, x);
  if (changes.length > 0) f.changes = changes;
}

/** The enums of a field's stored value: its own (no path), and those inside its JSON (by dotted path). */
function followEnums(
  f: FieldModel,
  name: string,
  old: LockedField,
  changes: StoredChange[],
  where: string,
  x: Following,
) {
  for (const e of storedEnums(f, name, where)) followValues(e, e.path === name ? undefined : e.path, old, changes, x);
}

/**
 * An enum's values the lock records (a field's own, or at `path` inside its JSON): a removed one over stored
 * rows needs the value its rows take (renamedValues, old: new), migrated in place; adding values needs nothing.
 * Updates `changes`.
 */
function followValues(
  e: StoredEnum,
  path: string | undefined,
  old: LockedField,
  changes: StoredChange[],
  x: Following,
) {
  const { f } = e;
  const vocabulary = f.values?.length === x.capabilities.length && f.values.every((v, i) => v === x.capabilities[i]);
  // A capability's rename is declared in access.yaml (renamedCapabilities), whatever field holds the vocabulary.
  const at = vocabulary ? x.vocabularyAt : `${e.where}/renamedValues`;
  const where = path ? `${e.where} (${path})` : e.where;
  // This version's mapping is the spec's to amend; earlier ones are history (their old values gone from the lock).
  const now = changes.findIndex((c) => c.kind === 'values' && c.since === x.version && c.path === path);
  const amended = now >= 0 ? changes.splice(now, 1)[0].renamed! : {};
  const oldValues = path ? old.nestedValues?.[path] : old.values;
  const stored = oldValues === undefined ? undefined : [...oldValues, ...Object.keys(amended)];
  const renamed = renamesOf(
    f,
    stored,
    changes.filter((c) => c.path === path),
    at,
    x.problems,
  );
  const declare = vocabulary
    ? (value: string) => `in access.yaml: renamedCapabilities: { ${value}: <a capability> }`
    : (value: string) => `renamedValues: { ${value}: <one of ${f.values?.join(', ')}> }${path ? ' on this field' : ''}`;
  for (const value of oldValues ?? [])
    if (!f.values?.includes(value) && !(value in renamed))
      x.problems.push(
        `${where}: its value ${value} is removed over stored rows: declare the value they take, ${declare(value)}` +
          (x.version <= x.lockedVersion ? `, and ${raise(x)}` : ''),
      );
  if (Object.keys(renamed).length === 0) return;
  if (x.version <= x.lockedVersion && now < 0)
    x.problems.push(`${at}: renaming stored values changes what rows hold: ${raise(x)}`);
  else changes.push({ since: x.version, kind: 'values', ...(path ? { path } : {}), rows: 'copy', renamed });
}

/** A field declared renamedFrom another: a new column, copied from the old field's (or converted as declared). */
function renameOver(r: ResourceModel, name: string, f: FieldModel, locked: LockedTable, where: string, x: Following) {
  const old = locked.fields[f.renamedFrom!];
  const at = `${where}/renamedFrom`;
  if (!old) x.problems.push(`${at}: the stored table has no field ${f.renamedFrom}`);
  else if (f.renamedFrom! in r.fields) x.problems.push(`${at}: ${f.renamedFrom} is still a field of this resource`);
  else if (x.version <= x.lockedVersion) x.problems.push(`${at}: a rename moves stored values: ${raise(x)}`);
  else if (old.type !== storedType(f) && !f.existingRows)
    x.problems.push(
      `${at}: ${f.renamedFrom} was ${old.type}, ${name} is ${storedType(f)}: declare existingRows: convert, { default: V } or clear`,
    );
  else {
    setColumn(f, name, freshColumn(x.taken, snakeCase(name), x.version));
    const from = [...new Set([old.column, ...(old.changes ?? []).flatMap((c) => c.from ?? [])])];
    const rows = old.type === storedType(f) ? 'copy' : f.existingRows!;
    f.changes = [{ since: x.version, kind: 'rename', from, rows }];
    return;
  }
  setColumn(f, name, freshColumn(x.taken, snakeCase(name), x.version));
}

/** The spec's renamedValues this version carries out: each checked against the values now and those stored. */
function renamesOf(
  f: FieldModel,
  stored: string[] | undefined,
  changes: StoredChange[],
  at: string,
  problems: string[],
): Record<string, string> {
  const renamed: Record<string, string> = {};
  for (const [from, to] of Object.entries(f.renamedValues ?? {})) {
    const wrong = f.values?.includes(from)
      ? `${from} is still one of the field's values`
      : !f.values?.includes(to)
        ? `${to} is not one of the field's values`
        : undefined;
    if (wrong) problems.push(`${at}/${from}: ${wrong}`);
    else if (!stored || stored.includes(from)) renamed[from] = to;
    // An old version's mapping left in the spec is harmless; one of a value never stored is a mistake.
    else if (!changes.some((c) => c.kind === 'values' && c.renamed?.[from] === to))
      problems.push(`${at}/${from}: the stored field has no value ${from}`);
  }
  return renamed;
}
