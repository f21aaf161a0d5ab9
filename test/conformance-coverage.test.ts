// The spec coverage matrix (conformance/spec-coverage.ts): every statement of the spec is checked by a rule or says
// why not, every rule declares what it checks, and --profile spec leaves out exactly the rules that check
// decisions of ours.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { defectCatalogue } from '../conformance/defects.js';
import type { ConformancePlan } from '../conformance/plan.js';
import { apiRuleChecks, resourceRules } from '../conformance/generic-rules.js';
import { apiShapeChecks, grpcSurfaceChecks } from '../conformance/platform-rules.js';
import { selectRules } from '../conformance/run.js';
import {
  breaksWhatItChecks,
  coverageMatrix,
  coverageOf,
  coverageProblems,
  provenBy,
  ruleCoverage,
  specStatements,
} from '../conformance/spec-coverage.js';
import { runScript } from './support/process.js';

const plan = JSON.parse(readFileSync('generated/conformance/plan.json', 'utf8')) as ConformancePlan;

test('npm run conformance -- --coverage prints every spec statement and what checks it, and exits 0', async () => {
  const r = await runScript('scripts/conformance.ts', ['--coverage'], {});
  assert.is(r.status, 0, r.stderr);
  for (const s of specStatements) assert.match(r.stdout, `${s.id}  `, s.id);
  assert.match(r.stdout, /^\d+ spec statements: \d+ checked, \d+ gaps, \d+ not observable$/m);
  assert.match(r.stdout, /rules beyond the spec/);
  // Per rule and protocol, the planted defect that proves it can fail.
  assert.match(
    r.stdout,
    /^ {2}list\/page-size-max over grpc: pages capped at 100 \(breaks spec:4\.list\.page_size\.max\)$/m,
  );
  assert.match(r.stdout, /^ {2}api\/json-answers over http: answers as text\/plain/m);
  assert.not.match(r.stdout, /api\/json-answers over grpc/, 'a rule of HTTP headers is proven over HTTP only');
  assert.not.match(r.stdout, /NO DEFECT PROVES IT/);
});

test('every rule of the matrix is proven able to fail over each protocol it runs over, by a defect of a line it checks', () => {
  const proofs = provenBy();
  assert.is(
    proofs.length,
    Object.values(ruleCoverage).reduce((n, c) => n + (c.over ?? ['http', 'grpc']).length, 0),
  );
  for (const p of proofs) assert.ok(p.defects.length > 0, `${p.rule} over ${p.protocol}: no defect proves it`);
  for (const d of defectCatalogue()) {
    assert.ok(d.proves.length > 0, `${d.name}: proves no rule`);
    for (const rule of d.proves) {
      const c = coverageOf(rule)!;
      assert.ok(breaksWhatItChecks(d, c), `${d.name}: ${rule} checks ${d.breaks}`);
      assert.ok(
        plan.rules.some((r) => r.name === rule),
        `${d.name}: ${rule} is a rule of the plan`,
      );
    }
  }
});

test('no statement is left without a rule or a reason, and no rule names a statement that does not exist', () => {
  assert.equal(coverageProblems(), []);
  const ids = specStatements.map((s) => s.id);
  assert.is(new Set(ids).size, ids.length, 'ids are unique');
  for (const row of coverageMatrix())
    if (row.unchecked) assert.match(row.unchecked, /^(gap|not observable): /, `${row.id}: the reason says which`);
});

test("every statement's section is a section of the spec", () => {
  // The spec's section headings, kept in test/facts/ (scripts/tooling/reference-facts.mjs).
  const headings: { section: string }[] = JSON.parse(readFileSync('test/facts/spec-sections.json', 'utf8'));
  const sections = new Set(headings.map((h) => h.section));
  for (const s of specStatements) assert.ok(sections.has(s.id.split(/[:.]/)[1]), `${s.id}: no such section`);
});

test('every rule, implemented or planned, declares what it checks', () => {
  for (const rule of [
    ...Object.keys(resourceRules),
    ...Object.keys(apiRuleChecks),
    ...Object.keys(apiShapeChecks),
    ...Object.keys(grpcSurfaceChecks),
  ])
    assert.ok(ruleCoverage[rule], `${rule} has no entry in conformance/spec-coverage.ts`);
  for (const r of plan.rules) assert.ok(coverageOf(r.rule), `${r.name} declares no spec ids`);
});

test('--profile spec leaves out exactly the rules that check decisions of ours', () => {
  const all = selectRules(plan, [], 'all');
  const spec = selectRules(plan, [], 'spec');
  assert.is(all.length, plan.rules.length);
  const left = all.filter((r) => !spec.includes(r));
  assert.ok(left.length > 0, 'some rules check decisions of ours');
  for (const r of left) assert.ok(coverageOf(r.rule)!.decision, r.name);
  for (const r of spec) assert.not.ok(coverageOf(r.rule)!.decision, r.name);
  assert.ok(
    left.some((r) => r.rule === 'list/page-token-tamper-rejected'),
    'a tampered page token is our decision',
  );
});

test.run();
