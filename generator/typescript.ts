// TypeScript type text for declared fields: handler requests and responses, stored records and resources.
import type { FieldModel, ResourceModel } from '../runtime/model.js';

/** 'resource' leaves out input-only fields, as responses do (runtime/records.ts outputObject). */
type Form = 'message' | 'resource';

export function fieldType(f: FieldModel, form: Form = 'message'): string {
  const base = scalarType(f, form);
  return f.repeated ? `Array<${base}>` : base;
}

function scalarType(f: FieldModel, form: Form): string {
  switch (f.type) {
    case 'string':
    case 'int64':
    case 'timestamp':
    case 'duration':
      return 'string';
    case 'bool':
      return 'boolean';
    case 'int32':
    case 'double':
      return 'number';
    case 'enum':
      return (f.values ?? []).map((v) => JSON.stringify(v)).join(' | ');
    case 'object':
      return objectType(f.fields ?? {}, false, form);
    case 'map':
      return `Record<string, ${fieldType(f.mapValue!, form)}>`;
  }
}

const propertyName = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

/** allRequired: every field present (a response), otherwise only declared-required ones. */
export function objectType(fields: Record<string, FieldModel>, allRequired: boolean, form: Form = 'message'): string {
  const members = Object.entries(fields)
    .filter(([, f]) => form !== 'resource' || !f.inputOnly)
    .map(([name, f]) => {
      const optional = allRequired || f.required ? '' : '?';
      return `${propertyName(name)}${optional}: ${fieldType(f, form)}`;
    });
  return `{ ${members.join('; ')} }`;
}

/**
 * A record as runtime/table.ts reads and writes it: an unset field is a null column once stored and absent
 * before (a create step sees it so); required fields are always set, except output-only ones the server fills.
 */
export function recordMembers(r: ResourceModel): string[] {
  return [
    'uid: string',
    'parentUid: string | null',
    'createTime: string',
    'updateTime: string',
    ...Object.entries(r.fields).map(([name, f]) =>
      f.required && !f.outputOnly
        ? `${propertyName(name)}: ${fieldType(f)}`
        : `${propertyName(name)}?: ${fieldType(f)} | null`,
    ),
  ];
}

/** A resource as the API shows it (runtime/records.ts toResource): unset fields omitted, input-only ones never shown. */
export function resourceMembers(r: ResourceModel): string[] {
  const shown = Object.entries(r.fields).filter(([, f]) => !f.inputOnly);
  return [
    'uid: string',
    // A create-only field is in the create response alone.
    ...shown.map(
      ([name, f]) =>
        `${propertyName(name)}${f.required && !f.outputOnly && !f.createOnly ? '' : '?'}: ${fieldType(f, 'resource')}`,
    ),
    'createTime: string',
    'updateTime: string',
  ];
}
