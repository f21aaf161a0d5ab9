// npm run golden [-- --update]: compares the generator's output for the widgets fixture with test/golden/widgets/,
// or rewrites those goldens. npm test runs the same comparison (test/golden.test.ts).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseCommandLine } from '../cli-args.js';
import { compareWithGoldens, generateFixture, goldenDir, widgetParts, writeGoldens } from './golden-files.js';

const { values } = parseCommandLine({
  name: 'golden',
  usage: `
usage: npm run golden [-- --update]
Generates spec/ plus test/fixtures/widgets.yaml (as the gadgets domain) into a scratch directory and compares
the parts that show the generator's work for widgets with ${goldenDir}/: the model entry, the OpenAPI
paths and schemas, the entity schema, the router lines, the validators and the conformance plan entries.
Prints a short diff of each golden that differs and exits 1; npm test runs the same comparison.
  --update   rewrite the goldens with what the generator emits now; review their diff before committing`,
  options: { update: { type: 'boolean', default: false } },
});

mkdirSync('.tmp', { recursive: true });
const scratch = mkdtempSync(join('.tmp', 'golden-'));
try {
  const parts = await widgetParts(generateFixture(scratch));
  if (values.update) {
    const changed = writeGoldens(parts);
    console.log(
      changed.length === 0
        ? `${goldenDir}/ is up to date`
        : `rewrote ${changed.map((n) => join(goldenDir, n)).join(', ')}`,
    );
  } else {
    const differences = compareWithGoldens(parts);
    if (differences) {
      process.stderr.write(differences);
      process.exitCode = 1;
    } else console.log(`${goldenDir}/ matches what the generator emits`);
  }
} catch (e) {
  console.error(`golden: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
