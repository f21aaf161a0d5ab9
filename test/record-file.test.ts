// Import files are read a block at a time: records that span blocks, strings holding brackets, commas, quotes
// and line breaks, and files that end early or carry text after the array.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RecordFileError, recordsOf } from '../scripts/record-file.js';

const scratch = mkdtempSync(join(tmpdir(), 'platform-api-records-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

const records = [
  { name: 'plain' },
  { name: 'with [brackets], {braces}, "quotes" and a \\ backslash', tags: ['a,b', ']'] },
  { name: 'line\nbreak', nested: { deeper: [{ x: 1 }, [2, [3]]] } },
  { name: 'é and 😀', n: -1.5e3, ok: true, none: null },
];

async function read(text: string, blockSize: number): Promise<unknown[]> {
  const file = join(scratch, 'records');
  writeFileSync(file, text);
  const out: unknown[] = [];
  for await (const r of recordsOf(file, blockSize)) out.push(r);
  return out;
}

test('a JSON array and NDJSON give the same records, whatever the block size', async () => {
  for (const blockSize of [1, 3, 7, 64, 1 << 20]) {
    assert.equal(await read(JSON.stringify(records), blockSize), records, `array, blocks of ${blockSize}`);
    assert.equal(await read(`\n  ${JSON.stringify(records, null, 2)}\n\n`, blockSize), records, `indented array`);
    const lines = `${records.map((r) => JSON.stringify(r)).join('\n')}\n\n`;
    assert.equal(await read(lines, blockSize), records, `NDJSON, blocks of ${blockSize}`);
  }
  assert.equal(await read('[]', 1), []);
  assert.equal(await read('', 1), []);
});

test('a broken file names what is wrong', async () => {
  const refused = async (text: string, pattern: RegExp) => {
    try {
      await read(text, 4);
    } catch (e) {
      assert.instance(e, RecordFileError);
      assert.match((e as Error).message, pattern);
      return;
    }
    assert.unreachable(`${text} was read`);
  };
  await refused('[{"a":1},{"a":', /not valid JSON.*the array does not end/);
  await refused('[{"a":1}] x', /not valid JSON.*text after the array/);
  await refused('[{"a":1},{a:2}]', /not valid JSON \(record 2\)/);
  await refused('{"a":1}\n{"a":\n', /:2: not a JSON record/);
  try {
    await recordsOf(join(scratch, 'missing')).next();
    assert.unreachable('a missing file was read');
  } catch (e) {
    assert.match((e as Error).message, /cannot read .*missing/);
  }
});

test.run();
