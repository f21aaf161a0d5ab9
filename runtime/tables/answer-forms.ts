// What a list's page or a get reads of a resource's table and makes of each row: the columns of an answer and of a
// page token, no more, shaped into the answer (runtime/tables/answer-shape.ts); and, where the database renders
// answers (runtime/tables/answer-json.ts), the page token's columns and the answer's JSON text.
import type { ResourceModel } from '../model/api-model.js';
import { resourceProperties, type Row } from '../model/records.js';
import type { JsonSql } from '../storage/dialect.js';
import { answerJsonSql } from './answer-json.js';
import { compileAnswerShape } from './answer-shape.js';
import type { Selection, Table } from './table.js';

/** What a read selects, and what it makes of each row's values. */
export interface AnswerForm<I> {
  selection: Selection;
  item: (values: unknown[]) => I;
}

/** A row whose answer the database left to JavaScript (runtime/tables/answer-json.ts): read again as objects. */
export interface Unrendered {
  uid: string;
}

/** A resource's answers as objects, and as JSON text where the database renders them. */
export interface AnswerForms {
  objects: AnswerForm<Row>;
  json?: AnswerForm<string | Unrendered>;
}

/** The forms of r's answers read in the order of `orderedBy` (a get reads them as a list by uid would). */
export function answerFormsOf(table: Table, r: ResourceModel, orderedBy: string, json?: JsonSql): AnswerForms {
  const selection = table.selection([...resourceProperties(r), orderedBy]);
  const rendered = json && answerJsonSql(json, r, table.selection(resourceProperties(r)).columns);
  const keys = table.selection(['uid', orderedBy], rendered);
  const uidAt = keys.columns.findIndex(([property]) => property === 'uid');
  return {
    objects: { selection, item: compileAnswerShape(r, selection.columns) },
    json: rendered
      ? {
          selection: keys,
          item: (values) => (values[keys.columns.length] as string | null) ?? { uid: values[uidAt] as string },
        }
      : undefined,
  };
}
