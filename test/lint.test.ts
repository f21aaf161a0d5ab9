// The code stays in one shape: the linter (eslint.config.js) and the formatter (.prettierrc.json) find nothing.
// `npm run format` rewrites what prettier would change; `npm run lint` shows what eslint reports.
import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const run = (bin: string, args: string[]) => {
  try {
    execFileSync(process.execPath, [`node_modules/${bin}`, ...args], { encoding: 'utf8', stdio: 'pipe' });
    return '';
  } catch (e) {
    const failed = e as { stdout?: string; stderr?: string };
    return `${failed.stdout ?? ''}${failed.stderr ?? ''}`.trim() || String(e);
  }
};

test('eslint finds no problem (complexity, function length, typescript-eslint recommended)', () => {
  const report = run('eslint/bin/eslint.js', ['.']);
  assert.is(report, '', `npm run lint reports:\n${report.split('\n').slice(0, 40).join('\n')}`);
});

test('every file is formatted as prettier formats it', () => {
  const report = run('prettier/bin/prettier.cjs', ['--check', '--log-level', 'warn', '.']);
  assert.is(report, '', `npm run format would change:\n${report.split('\n').slice(0, 40).join('\n')}`);
});

test.run();
