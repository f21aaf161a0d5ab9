// Runs the plan's rules against a target and collects one result per rule.
import type { ConformancePlan, PlannedRule } from './plan.js';
import { coverageOf, specStatements } from './spec-coverage.js';
import { ConformanceFailure, Skip, type ApiClient, type Exchange } from './client.js';
import { Fixture } from './fixture.js';
import { apiRuleChecks, ruleFor } from './generic-rules.js';
import { apiShapeChecks, grpcSurfaceChecks, v1GrpcChecks } from './platform-rules.js';

export interface RuleResult {
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  /** why it was skipped, or what went wrong where no expectation was reached */
  reason?: string;
  /** how a rule ran where it fell back to a weaker check (a caller bound to no role) */
  note?: string;
  /** a failure: the spec lines its rule checks */
  spec?: { id: string; says: string }[];
  /** a failure of a rule that checks a decision of ours beyond the spec: which */
  decision?: string;
  /** a failure of a rule that checks a feature the API's spec/ declares: which */
  declared?: string;
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
    const result = await runRule(fx, r);
    results.push(result);
    if (result.status === 'failed') o.progress(`failed: ${r.name}`);
  }

  await cleanUp(o.client, fx);
  if (ownRoot && groups) await o.client.call('DELETE', `${groups.base}/${root}`).catch(() => undefined);
  return results;
}

/** What a failed rule checks: its spec lines, the decision of ours or the declaration of spec/ it checks. */
function checked(rule: string): Pick<RuleResult, 'spec' | 'decision' | 'declared'> {
  const c = coverageOf(rule);
  const spec = (c?.checks ?? []).map((id) => ({ id, says: specStatements.find((s) => s.id === id)?.says ?? '' }));
  return {
    ...(spec.length > 0 ? { spec } : {}),
    ...(c?.decision ? { decision: c.decision } : {}),
    ...(c?.declared ? { declared: c.declared } : {}),
  };
}

/** One line, so that the text report holds it as the JSON does. */
const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ');

async function runRule(fx: Fixture, r: PlannedRule): Promise<RuleResult> {
  fx.notes = [];
  const noted = () => (fx.notes.length > 0 ? { note: oneLine(fx.notes.join('; ')) } : {});
  try {
    if (r.resource) {
      const found = ruleFor(r.rule);
      if (!found) throw new Skip(`this suite has no check for ${r.rule}`);
      await found.fn(fx, fx.resource(r.resource), found.arg);
    } else {
      const check =
        apiRuleChecks[r.rule] ?? apiShapeChecks[r.rule] ?? grpcSurfaceChecks[r.rule] ?? v1GrpcChecks[r.rule];
      if (!check) throw new Skip(`this suite has no check for ${r.rule}`);
      await check(fx);
    }
    return { name: r.name, status: 'passed', ...noted() };
  } catch (e) {
    if (e instanceof Skip) return { name: r.name, status: 'skipped', reason: oneLine(e.message) };
    if (e instanceof ConformanceFailure)
      return {
        name: r.name,
        status: 'failed',
        ...checked(r.rule),
        request: describeRequest(e.exchange) ?? '(none: the expectation is about earlier answers)',
        expected: oneLine(e.expected),
        actual: oneLine(e.actual),
      };
    return {
      name: r.name,
      status: 'failed',
      ...checked(r.rule),
      reason: oneLine(e instanceof Error ? e.message : String(e)),
    };
  }
}

/** Deletes what the suite made: the many leaves several at once, then the rest newest first. */
async function cleanUp(client: ApiClient, fx: Fixture): Promise<void> {
  for (let i = 0; i < fx.leaves.length; i += 8)
    await Promise.all(
      fx.leaves.slice(i, i + 8).map((c) => client.call('DELETE', `${c.base}/${c.uid}`).catch(() => undefined)),
    );
  for (const c of [...fx.created].reverse()) await client.call('DELETE', `${c.base}/${c.uid}`).catch(() => undefined);
}
