// The documentation holds together: the README is a front door of at most 150 lines that reaches every page of
// docs/; every relative link resolves, to a heading where it names one; every shell block is run by the
// walk-through or says why not; every place in the code that sends a reader to a page and section names one that
// exists; and the Configuration table names every setting runtime/operate/config.ts reads.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { anchorOf, blocksOf, docPages, headingsOf, proseOf } from './support/doc-pages.js';

const pages = docPages();

test('the README is a front door: at most 150 lines, and it links every page of docs/', () => {
  const readme = readFileSync('README.md', 'utf8');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 150, `README.md has ${lines} lines`);
  const linked = new Set([...proseOf('README.md').matchAll(/\]\((docs\/[^)#\s]+\.md)(#[^)\s]*)?\)/g)].map((m) => m[1]));
  assert.equal(
    pages.filter((p) => p !== 'README.md' && !linked.has(p)),
    [],
    'pages of docs/ the README does not link',
  );
});

test('every relative link of README.md and docs/ resolves, to a heading of the page where it names one', () => {
  const broken: string[] = [];
  for (const page of pages)
    for (const [, target] of proseOf(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split('#');
      const file = path ? normalize(join(dirname(page), path)) : page;
      if (!existsSync(file)) broken.push(`${page}: ${target} (no such file)`);
      else if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md'))
        if (!headingsOf(file).some((h) => anchorOf(h) === anchor)) broken.push(`${page}: ${target} (no such heading)`);
    }
  assert.equal(broken, []);
});

test('every shell block is run by the walk-through or says why not', () => {
  const shells = pages.flatMap(blocksOf).filter((b) => /^(sh|bash|shell|console)\b/.test(b.info));
  assert.ok(shells.length >= 10, `${shells.length} shell blocks`);
  const unmarked = shells.filter((b) => b.info !== 'sh walkthrough' && !/^sh norun: .{30,}/.test(b.info));
  assert.equal(
    unmarked.map((b) => `${b.page}: \`\`\`${b.info}`),
    [],
    'mark a shell block "sh walkthrough" (test/walkthrough.test.ts runs it) or "sh norun: <why not>"',
  );
});

/** Files that may send a reader to the documentation: the code, the spec, the tests, the scripts. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|mjs|js|json|yaml|md)$/.test(e.name) || e.name === 'run' ? [path] : [];
  });
}

test('every reference to a page and section (code, spec, tests, error messages, docs) names one that exists', () => {
  const dirs = [
    'runtime',
    'server',
    'handlers',
    'framework',
    'generator',
    'conformance',
    'scripts',
    'spec',
    'test',
    'samples',
    'docs',
  ];
  const files = [...dirs.flatMap(sourceFiles), 'README.md', '.ci/run', 'eslint.config.js'];
  const broken: string[] = [];
  for (const file of files) {
    // A comment wraps where it will: a reference may run across lines and their comment markers.
    const text = readFileSync(file, 'utf8').replace(/\n\s*(\/\/|#|\*)?\s*/g, ' ');
    for (const [ref, page, section] of text.matchAll(/\b(README(?:\.md)?|docs\/[a-z-]+\.md)(?:,? "([^"]+)")?/g)) {
      const path = page === 'README' ? 'README.md' : page;
      if (!existsSync(path)) broken.push(`${file}: ${ref} (no such page)`);
      else if (section && !headingsOf(path).some((h) => h.replace(/`/g, '') === section))
        broken.push(`${file}: ${ref} (no such heading)`);
    }
  }
  assert.equal(broken, []);
});

test('the Configuration table of docs/operating.md names every setting runtime/operate/config.ts reads, and no other', () => {
  const config = readFileSync('runtime/operate/config.ts', 'utf8');
  const read = new Set(
    [...config.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(env, '([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1] ?? m[2]),
  );
  // A retired name is read only to say what replaced it.
  const retired = [...config.matchAll(/'([A-Z][A-Z0-9_]+) is replaced by/g)].map((m) => m[1]);
  for (const name of retired) read.delete(name);
  const operating = readFileSync('docs/operating.md', 'utf8');
  const table = operating.slice(
    operating.indexOf('## Configuration'),
    operating.indexOf('\n## ', operating.indexOf('## Configuration') + 1),
  );
  const rows = new Set(
    [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((x) => x[1])),
  );
  assert.ok(read.size >= 40, `${read.size} settings read`);
  assert.equal([...read].filter((n) => !rows.has(n)).sort(), [], 'settings without a row');
  assert.equal([...rows].filter((n) => !read.has(n)).sort(), [], 'rows of no setting');
});

test.run();
