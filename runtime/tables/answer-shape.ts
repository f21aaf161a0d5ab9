// A resource's answer made from a row's values in one pass: what toResource makes of the record the table
// would read (JSON columns parsed, booleans as booleans, unset fields left out, each value as the API shows
// it), without the record in between. Compiled once per resource and selection of columns into a function
// whose property stores name their keys, so V8 makes them fast: done generically, two objects per row and a
// store by a key it cannot foresee cost about a tenth of a list page.
import type { Column } from '../storage/dialect.js';
import type { FieldModel, ResourceModel } from '../model/api-model.js';
import { outputValue, shownFields, type Row } from '../model/records.js';

/** A row's values, in the order of the selection's columns, to the resource's answer. */
export type AnswerShape = (values: unknown[]) => Row;

/** Whether the API shows a stored value as it is: a scalar that is not an int64 (shown as decimal text). */
const shownAsStored = (f: FieldModel) => !f.repeated && f.type !== 'object' && f.type !== 'map' && f.type !== 'int64';

/** The expression reading a value (of a column of this kind) as the table's record would hold it. */
function stored(kind: Column['kind'], v: string): string {
  if (kind === 'json') return `(typeof ${v} === 'string' ? JSON.parse(${v}) : ${v})`;
  if (kind === 'boolean') return `(${v} === null || ${v} === undefined ? ${v} : ${v} === 1 || ${v} === true)`;
  return v;
}

/**
 * The shape of r's answer from rows of these columns ([property, column], in select-list order). A field
 * without a column in the selection is left out of the answer, as toResource leaves out an absent property.
 */
export function compileAnswerShape(r: ResourceModel, columns: readonly (readonly [string, Column])[]): AnswerShape {
  const at = new Map(columns.map(([prop, c], i) => [prop, { c, i }]));
  const read = (prop: string) => {
    const found = at.get(prop);
    return found ? stored(found.c.kind, `v[${found.i}]`) : 'undefined';
  };
  const models: FieldModel[] = [];
  const lines = [`const o = { uid: ${read('uid')} };`, 'let x;'];
  for (const [name, f] of shownFields(r.fields)) {
    if (!at.has(name)) continue;
    const key = JSON.stringify(name);
    const { c, i } = at.get(name)!;
    // The record's value, then the test toResource makes of it (JSON text may hold null itself).
    lines.push(`x = ${stored(c.kind, `v[${i}]`)};`);
    const shown = shownAsStored(f) ? 'x' : `show(x, models[${models.push(f) - 1}])`;
    lines.push(`if (x !== null && x !== undefined) o[${key}] = ${shown};`);
  }
  if (!r.timestamps || r.timestamps.includes('createTime')) lines.push(`o.createTime = ${read('createTime')};`);
  if (!r.timestamps || r.timestamps.includes('updateTime')) lines.push(`o.updateTime = ${read('updateTime')};`);
  lines.push('return o;');
  // The source holds only column positions and JSON-quoted property names: nothing of a request or a row.
  const make = new Function('show', 'models', `return function shape(v) {\n${lines.join('\n')}\n};`) as (
    show: typeof outputValue,
    models: FieldModel[],
  ) => AnswerShape;
  return make(outputValue, models);
}
