// TypeScript type text for declared fields, used for the handler interfaces.
import type { FieldModel } from '../runtime/model.js';

export function fieldType(f: FieldModel): string {
  const base = scalarType(f);
  return f.repeated ? `Array<${base}>` : base;
}

function scalarType(f: FieldModel): string {
  switch (f.type) {
    case 'string': case 'int64': case 'timestamp': case 'duration': return 'string';
    case 'bool': return 'boolean';
    case 'int32': case 'double': return 'number';
    case 'enum': return (f.values ?? []).map((v) => JSON.stringify(v)).join(' | ');
    case 'object': return objectType(f.fields ?? {}, false);
    case 'map': return `Record<string, ${fieldType(f.mapValue!)}>`;
  }
}

/** allRequired: every field present (a response), otherwise only declared-required ones. */
export function objectType(fields: Record<string, FieldModel>, allRequired: boolean): string {
  const members = Object.entries(fields).map(([name, f]) => {
    const optional = allRequired || f.required ? '' : '?';
    return `${/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name)}${optional}: ${fieldType(f)}`;
  });
  return `{ ${members.join('; ')} }`;
}
