// Runs the plan's rules against a target and collects one result per rule.
import type { ConformancePlan, PlannedRule } from './plan.js';
import { coverageOf } from './spec-coverage.js';
import { ConformanceFailure, Skip, type ApiClient, type Exchange } from './client.js';
import { apiRuleChecks, apiShapeChecks, Fixture, ruleFor } from './rules.js';

export interface RuleResult {
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  reason?: string;
  expected?: string;
  actual?: string;
  request?: string;
}

export interface RunOptions {
  client: ApiClient;
  plan: ConformancePlan;
  /** Work under this group; without one the suite creates a root group and deletes it at the end. */
  parent?: string;
  /** rule names or globs to run (all when empty) */
  only: string[];
  /** rule names or globs of known failures, reported as skipped */
  known: string[];
  /** spec: only what the spec itself requires (rules checking decisions of ours are left out); all: every rule */
  profile?: Profile;
  progress: (line: string) => void;
}

export function globToRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
}

function describeRequest(x?: Exchange): string | undefined {
  if (!x) return undefined;
  const body =
    x.requestBody === undefined
      ? ''
      : ` ${typeof x.requestBody === 'string' ? x.requestBody : JSON.stringify(x.requestBody)}`;
  const rpc = x.rpc ? ` as ${x.rpc}` : '';
  return `${x.method} ${x.path}${rpc}${body.length > 300 ? `${body.slice(0, 300)}...` : body}`;
}

export type Profile = 'spec' | 'all';

/** The plan's rules a run takes: those --filter names (all without one), and with the spec profile, none of ours. */
export function selectRules(plan: ConformancePlan, filters: string[], profile: Profile = 'all'): PlannedRule[] {
  const only = filters.map(globToRegExp);
  return plan.rules.filter(
    (r) =>
      (only.length === 0 || only.some((re) => re.test(r.name))) && (profile === 'all' || !coverageOf(r.rule)?.decision),
  );
}

export async function runConformance(o: RunOptions): Promise<RuleResult[]> {
  const known = o.known.map(globToRegExp);
  const selected = selectRules(o.plan, o.only, o.profile);
  const results: RuleResult[] = [];

  const groups = o.plan.resources.find((r) => r.collection === 'groups');
  let root = o.parent;
  let ownRoot = false;
  if (!root) {
    if (!groups) throw new Error('the plan has no groups resource; pass --parent');
    const x = await o.client.call('POST', groups.base, { name: `conformance-${Date.now().toString(36)}` });
    if (x.status !== 200 || typeof x.body?.uid !== 'string') {
      throw new Error(
        `cannot create the suite's group (POST ${groups.base} answered HTTP ${x.status} ${JSON.stringify(x.body)}); pass --parent GROUP_UID`,
      );
    }
    root = x.body.uid as string;
    ownRoot = true;
  }
  const fx = new Fixture(o.client, o.plan, root);
  o.progress(`running ${selected.length} rules under group ${root}`);

  for (const r of selected) {
    if (known.some((re) => re.test(r.name))) {
      results.push({ name: r.name, status: 'skipped', reason: 'listed in the skip file' });
      continue;
    }
    try {
      if (r.resource) {
        const found = ruleFor(r.rule);
        if (!found) throw new Skip(`this suite has no check for ${r.rule}`);
        await found.fn(fx, fx.resource(r.resource), found.arg);
      } else {
        const check = apiRuleChecks[r.rule] ?? apiShapeChecks[r.rule];
        if (!check) throw new Skip(`this suite has no check for ${r.rule}`);
        await check(fx);
      }
      results.push({ name: r.name, status: 'passed' });
    } catch (e) {
      if (e instanceof Skip) results.push({ name: r.name, status: 'skipped', reason: e.message });
      else if (e instanceof ConformanceFailure) {
        results.push({
          name: r.name,
          status: 'failed',
          expected: e.expected,
          actual: e.actual,
          request: describeRequest(e.exchange),
        });
      } else results.push({ name: r.name, status: 'failed', reason: e instanceof Error ? e.message : String(e) });
    }
    const last = results[results.length - 1];
    if (last.status === 'failed') o.progress(`FAIL ${r.name}`);
  }

  o.progress(`cleaning up ${fx.created.length} records the suite created`);
  for (const c of [...fx.created].reverse()) {
    await o.client.call('DELETE', `${c.base}/${c.uid}`).catch(() => undefined);
  }
  if (ownRoot && groups) await o.client.call('DELETE', `${groups.base}/${root}`).catch(() => undefined);
  return results;
}
