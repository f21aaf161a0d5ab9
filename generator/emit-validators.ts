// AJV standalone validators: request bodies and records (no coercion), and query strings (coerced from text).
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone/index.js';
import type { ApiModel, ResourceModel } from '../runtime/model/api-model.js';
import { filterField, operationOf, standardFields } from '../runtime/model/api-model.js';
import { fieldSchema, int64Text, objectSchema, type JsonSchema } from './json-schema.js';

function newAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    strict: false,
    code: { source: true, esm: false },
    coerceTypes: coerce ? 'array' : false,
  });
  addFormats.default(ajv, ['date-time']);
  ajv.addFormat('int64', new RegExp(int64Text));
  return ajv;
}

const aliases = (snake: string, camel: string, s: JsonSchema) => ({ [snake]: s, [camel]: s });

export function listQuerySchema(r: ResourceModel): JsonSchema {
  const str = { type: 'string' };
  const properties: Record<string, JsonSchema | boolean> = {
    ...aliases('page_size', 'pageSize', { type: 'integer' }),
    ...aliases('page_token', 'pageToken', str),
    ...aliases('order_by', 'orderBy', str),
    skip: { type: 'integer' },
    ...aliases('uidp.descendants_of', 'uidp.descendantsOf', str),
    ...aliases('uidp.children_of', 'uidp.childrenOf', str),
    ...aliases('uidp.ancestors_of', 'uidp.ancestorsOf', str),
    ...aliases('uidp.in_root', 'uidp.inRoot', { type: 'boolean' }),
    'uidp.ids': { type: 'array', items: str },
  };
  for (const f of r.filters) {
    const s = fieldSchema(filterField(r, f), 'record');
    properties[f.param] = f.match === 'anyOf' ? { type: 'array', items: s } : s;
  }
  // A parameter of the reference's list that we do not serve is refused as such (the false schema).
  for (const name of r.unservedFilters) properties[name] = false;
  return takesOnly(properties);
}

/** An object of these properties and no others: a query parameter a call does not take is refused by name. */
function takesOnly(properties: Record<string, JsonSchema | boolean>, required: string[] = []): JsonSchema {
  const names = Object.keys(properties);
  return {
    type: 'object',
    properties,
    propertyNames: names.length > 0 ? { enum: names } : false,
    ...(required.length > 0 ? { required } : {}),
  };
}

export function emitValidators(model: ApiModel): { bodies: string; queries: string } {
  const bodies = newAjv(false);
  const queries = newAjv(true);
  const bodyExports: Record<string, string> = {};
  const queryExports: Record<string, string> = {};
  const add = (ajv: Ajv, exports: Record<string, string>, id: string, schema: JsonSchema) => {
    ajv.addSchema({ ...schema, $id: id });
    exports[id.replace(/[^A-Za-z0-9]/g, '_')] = id;
  };
  for (const r of Object.values(model.resources)) {
    const all = { ...r.fields };
    add(bodies, bodyExports, `${r.collection}.record`, objectSchema({ ...standardFields, ...all }, 'record', true));
    // What a read-modify-write client echoes back (the uid, times, a binding's hydrated identity) is ignored.
    const echoed = Object.fromEntries(
      Object.entries({ ...standardFields, ...r.presents }).map(([k, f]) => [k, { ...f, outputOnly: true }]),
    );
    if (operationOf(r, 'create'))
      add(bodies, bodyExports, `${r.collection}.create`, objectSchema({ ...echoed, ...all }, 'input', true));
    if (operationOf(r, 'update'))
      add(bodies, bodyExports, `${r.collection}.update`, objectSchema({ ...echoed, ...all }, 'input', false));
    for (const s of r.subresources) {
      if (s.update)
        add(bodies, bodyExports, `${r.collection}.${s.name}.update`, objectSchema(s.fields, 'input', false));
    }
    if (r.operations.list) add(queries, queryExports, `${r.collection}.list`, listQuerySchema(r));
  }
  for (const e of model.endpoints) {
    if (e.body) add(bodies, bodyExports, `${e.domain}.${e.name}.body`, objectSchema(e.body, 'input', true));
    if (e.listQuery) continue; // validated as the listed collection's list
    const query = Object.fromEntries(Object.entries(e.query).map(([k, f]) => [k, fieldSchema(f, 'record')]));
    add(
      queries,
      queryExports,
      `${e.domain}.${e.name}.query`,
      takesOnly(
        query,
        Object.entries(e.query)
          .filter(([, f]) => f.required)
          .map(([k]) => k),
      ),
    );
  }
  return {
    bodies: standaloneCode.default(bodies, bodyExports),
    queries: standaloneCode.default(queries, queryExports),
  };
}
