// The conformance rules the spec implies for each resource: stable names the conformance suite runs by.
import type { ApiModel } from '../runtime/model.js';

export interface ConformanceRule {
  name: string;
  resource: string;
  rule: string;
}

export function emitConformanceRules(model: ApiModel): ConformanceRule[] {
  const rules: ConformanceRule[] = [];
  for (const r of Object.values(model.resources)) {
    const id = `${r.domain}.${r.collection}`;
    const add = (rule: string) => rules.push({ name: `${id}/${rule}`, resource: r.collection, rule });
    if (r.operations.create) {
      add('create/returns-resource');
      for (const [name, f] of Object.entries(r.fields)) {
        if (f.required && !f.outputOnly) add(`create/requires-${name}`);
        if (f.pattern) add(`create/pattern-${name}`);
        if (f.outputOnly) add(`create/ignores-output-only-${name}`);
      }
    }
    if (r.operations.get) add('get/not-found-has-resource-info');
    if (r.operations.list) {
      add('list/envelope');
      add('list/page-walk-no-gaps');
      add('list/page-token-bound-to-query');
      add('list/page-token-tamper-rejected');
      for (const key of Object.keys(r.orderBy)) add(`list/order-by-${key}`);
      for (const f of r.filters) add(`list/filter-${f.param}`);
    }
    if (r.operations.update) {
      add('update/no-mask');
      add('update/mask-ignores-other-fields');
      add('update/star-replaces');
      add('update/unknown-mask-rejected');
    }
    if (r.operations.delete) add('delete/then-not-found');
    if (r.children.length > 0 && r.operations.delete) add('delete/refused-when-not-empty');
  }
  return rules;
}
