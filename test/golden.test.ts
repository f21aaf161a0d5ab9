// The generator's goldens: its output for the widgets fixture, cut to that resource (scripts/tooling/golden-files.ts),
// must match test/golden/widgets/ byte for byte. A difference is reported with a short diff and the command that
// refreshes them (`npm run golden -- --update`). Each run generates under a new scratch directory, so an absolute
// path or anything else that varies between runs shows up as a difference.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  compareWithGoldens,
  generateFixture,
  goldenDir,
  lineDiff,
  refreshCommand,
  widgetParts,
  writeGoldens,
} from '../scripts/tooling/golden-files.js';

const scratchRoot = join(process.cwd(), '.tmp');
mkdirSync(scratchRoot, { recursive: true });
const scratch = mkdtempSync(join(scratchRoot, 'golden-'));
let parts: Record<string, string>;

test.before(async () => {
  parts = await widgetParts(generateFixture(scratch));
});
test.after(() => rmSync(scratch, { recursive: true, force: true }));

test('the widgets fixture generates what test/golden/widgets/ holds, byte for byte', () => {
  const differences = compareWithGoldens(parts);
  // As details, which uvu prints once under the test's name, not repeated in the stack as a message would be.
  if (differences) {
    throw new assert.Assertion({
      message: 'the goldens differ from what the generator emits',
      details: differences,
      operator: 'golden',
      expects: goldenDir,
      actual: scratch,
    });
  }
});

test('a changed, missing or stale golden is reported with a diff and the command that refreshes them', () => {
  const dir = join(scratch, 'goldens');
  assert.equal(writeGoldens(parts, dir), Object.keys(parts).sort());
  assert.is(compareWithGoldens(parts, dir), '');

  const routes = join(dir, 'routes.txt');
  const golden = readFileSync(routes, 'utf8');
  const changed = golden.replace('ops.get(', 'ops.got(');
  assert.is(changed.length, golden.length, 'one byte changed');
  writeFileSync(routes, changed);
  const report = compareWithGoldens(parts, dir);
  assert.match(report, `${routes} differs from what the generator emits now:\n@@ `);
  assert.match(report, `\n-   router.get('/gadgets/v2/widgets/{uid*}', ops.queryParameters([]), ops.got(`);
  assert.match(report, `\n+   router.get('/gadgets/v2/widgets/{uid*}', ops.queryParameters([]), ops.get(`);
  assert.match(report, refreshCommand);

  rmSync(join(dir, 'model.json'));
  writeFileSync(join(dir, 'old.json'), '{}\n');
  const missing = compareWithGoldens(parts, dir);
  assert.match(missing, `${join(dir, 'model.json')}: missing`);
  assert.match(missing, `${join(dir, 'old.json')}: no longer generated`);

  assert.equal(
    writeGoldens(parts, dir),
    ['model.json', 'old.json', 'routes.txt'],
    'the refresh rewrites what differs and removes what is stale',
  );
  assert.is(compareWithGoldens(parts, dir), '');
});

test('the diff shows changed lines with two lines of context and stops after the limit', () => {
  const lines = Array.from({ length: 10 }, (_, i) => `line ${i}`);
  const edited = [...lines.slice(0, 4), 'line 4 edited', ...lines.slice(5, 9), 'line 10'];
  assert.is(
    lineDiff(lines.join('\n'), edited.join('\n')),
    [
      '@@ -3 +3 @@',
      '  line 2',
      '  line 3',
      '- line 4',
      '+ line 4 edited',
      '  line 5',
      '  line 6',
      '  line 7',
      '  line 8',
      '- line 9',
      '+ line 10',
    ].join('\n'),
  );
  const many = Array.from({ length: 100 }, (_, i) => `${i}`);
  const diff = lineDiff(many.join('\n'), many.map((l) => `${l}!`).join('\n'));
  assert.is(diff.split('\n').filter((l) => /^[-+] /.test(l)).length, 40);
  assert.match(diff, /\n\.\.\. and 160 more differing lines$/);
});

test("the goldens are the resource's parts alone, small enough to review", () => {
  for (const [name, text] of Object.entries(parts)) {
    assert.ok(text.length < 40_000, `${goldenDir}/${name} is ${text.length} characters`);
    assert.not.match(text, process.cwd(), `${name} holds no absolute path`);
    assert.not.match(
      text,
      /\bgroups_|roleBindings|apiModel\.resources\.(?!widgets)/,
      `${name} holds nothing of other resources`,
    );
  }
});

test.run();
