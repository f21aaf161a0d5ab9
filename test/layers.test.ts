// runtime/ in its floors (scripts/tooling/layers.ts): no import cycle, no import pointing up a floor, no file
// outside a floor's folder but the face (runtime/index.ts), which nothing in runtime/ imports. A planted cycle, upward import and stray file are each found.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { floors, layerReport } from '../scripts/tooling/layers.js';

test("runtime/'s import graph has no cycle, no import pointing up and no file outside the floors", () => {
  const r = layerReport('.');
  assert.ok(r.files.length > 50, `runtime/ read: ${r.files.length} files`);
  assert.equal(r.cycles, [], 'import cycles');
  assert.equal(r.up, [], 'imports pointing up the floors');
  assert.equal(r.unplaced, [], 'files outside the floors');
  const folders = fs.readdirSync('runtime', { withFileTypes: true }).filter((e) => e.isDirectory());
  assert.equal(folders.map((e) => e.name).sort(), floors.flat().sort(), 'one folder per floor');
});

test('a cycle, an import up a floor and a file at the top are each reported', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'layers-'));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  };
  try {
    write('runtime/model/a.ts', "import type { B } from './b.js';\nexport type A = B;\n");
    write('runtime/model/b.ts', "export { type A } from './a.js';\nexport type B = string;\n");
    write('runtime/storage/c.ts', "export const c = () => import('../http/d.js');\n");
    write('runtime/http/d.ts', 'export const d = 1;\n');
    write('runtime/stray.ts', 'export const stray = 1;\n');
    write('runtime/index.ts', "export type { A } from './model/a.js';\n");
    write('runtime/model/e.ts', "export type { A } from '../index.js';\n");
    const r = layerReport(root);
    assert.equal(
      r.cycles.map((c) => c.sort()),
      [['runtime/model/a.ts', 'runtime/model/b.ts']],
    );
    assert.equal(r.up.sort(), ['runtime/model/e.ts -> runtime/index.ts', 'runtime/storage/c.ts -> runtime/http/d.ts']);
    assert.equal(r.unplaced, ['runtime/stray.ts']);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test.run();
