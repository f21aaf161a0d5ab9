// TypeScript type text for declared fields: handler requests and responses, stored records and resources.
import type { EndpointModel, FieldModel, ResourceModel } from '../runtime/model/api-model.js';

/**
 * 'resource' leaves out input-only fields, as responses do (runtime/model/records.ts outputObject); 'input' is what a
 * client may send: an int64 as a string, a number or a bigint (the server reads all three).
 */
type Form = 'message' | 'resource' | 'input';

export function fieldType(f: FieldModel, form: Form = 'message'): string {
  const base = scalarType(f, form);
  return f.repeated ? `Array<${base}>` : base;
}

function scalarType(f: FieldModel, form: Form): string {
  switch (f.type) {
    case 'int64':
      return form === 'input' ? 'string | number | bigint' : 'string';
    case 'string':
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

export const propertyName = (name: string): string => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

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
 * A record as runtime/tables/table.ts reads and writes it: an unset field is a null column once stored and absent
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

/** A resource as the API shows it (runtime/model/records.ts toResource): unset fields omitted, input-only ones never shown. */
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

/** An endpoint's request (path parameters, query, `body`) and response, as its handler and the client see them. */
export function endpointTypes(e: EndpointModel, form: Form = 'message'): { request: string; response: string } {
  const params = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => `${m[1]}: string`);
  const query = e.listQuery ? '[parameter: string]: unknown' : objectType(e.query, false, form).slice(2, -2);
  const body = e.body ? `body: ${objectType(e.body, false, form)}` : '';
  return {
    request: `{ ${[...params, query, body].filter(Boolean).join('; ')} }`,
    response: objectType(e.response, true),
  };
}
