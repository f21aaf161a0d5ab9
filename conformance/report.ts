// The report of a run, one set of facts in two forms: the text a person reads and the JSON a tool reads. Each
// failure names the spec lines its rule checks, the request, what was expected and what came back; each skip says
// why; a rule that passed by a weaker check than its own says which. A test reads both forms back and compares them.
import type { RuleResult } from './run.js';

export interface Report {
  target: string;
  protocol: string;
  durationMs: number;
  passed: number;
  failed: number;
  skipped: number;
  results: RuleResult[];
}

export function makeReport(target: string, protocol: string, durationMs: number, results: RuleResult[]): Report {
  const count = (status: RuleResult['status']) => results.filter((r) => r.status === status).length;
  return {
    target,
    protocol,
    durationMs,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
    results,
  };
}

/** A failure's facts as labelled lines; `error` is a failure without an expectation (a crash, a refused setup). */
function factLines(r: RuleResult): [string, string][] {
  const lines: [string, string][] = (r.spec ?? []).map((s) => ['spec', `${s.id}: ${s.says}`]);
  if (r.decision) lines.push(['decision', r.decision]);
  if (r.declared) lines.push(['declared', r.declared]);
  if (r.request !== undefined) lines.push(['request', r.request]);
  if (r.expected !== undefined) lines.push(['expected', r.expected], ['actual', r.actual ?? '']);
  if (r.reason !== undefined) lines.push(['error', r.reason]);
  return lines;
}

/**
 * The text form: failures with their facts, then skips with their reasons, then the notes of rules that passed by a
 * weaker check, then the summary line last.
 */
export function formatReport(report: Report): string {
  const out: string[] = [];
  for (const r of report.results.filter((x) => x.status === 'failed')) {
    out.push(`FAIL ${r.name}`);
    for (const [label, text] of factLines(r)) out.push(`  ${`${label}:`.padEnd(10)}${text}`);
  }
  for (const r of report.results.filter((x) => x.status === 'skipped')) out.push(`SKIP ${r.name}: ${r.reason}`);
  // A rule that passed by a weaker check than its own (a fallback) says so.
  for (const r of report.results.filter((x) => x.status === 'passed' && x.note)) out.push(`NOTE ${r.name}: ${r.note}`);
  out.push(`${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
  return out.join('\n');
}
