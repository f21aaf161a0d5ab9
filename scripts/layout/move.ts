// The move of runtime/ into its layers (issue 30; the floors of DESIGN.md "The target layout of runtime/"), as a
// program so that it replays on a main that moved on: `npx tsx scripts/layout/move.ts`. Every file of runtime/ is
// in the table below (a file that is not stops the run, naming it: a new file needs its floor chosen); a file of
// the table that is gone is skipped, so a second run changes nothing. Each relative path written in the code of
// the project (imports, `export ... from`, `import()`, `declare module`, `new URL(..., import.meta.url)`) that
// names a moved file, or is written in a moved file, is rewritten; so are the paths the generator emits into
// generated/ and the repository paths (`runtime/x.ts`) that code and comments name.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Node, Project } from 'ts-morph';

/** Old path -> new path, both from the repository's root. Files that stay are listed too, as themselves. */
export const moves: Record<string, string> = {
  // The face generated code imports, above every floor.
  'runtime/index.ts': 'runtime/index.ts',
  // 1 model: the vocabulary.
  'runtime/model.ts': 'runtime/model/api-model.ts',
  'runtime/records.ts': 'runtime/model/records.ts',
  'runtime/errors.ts': 'runtime/model/errors.ts',
  'runtime/uid.ts': 'runtime/model/uid.ts',
  'runtime/field-names.ts': 'runtime/model/field-names.ts',
  'runtime/field-mask.ts': 'runtime/model/field-mask.ts',
  // 2 storage: engines, SQL, the runtime's own tables.
  'runtime/store.ts': 'runtime/storage/store.ts',
  'runtime/sqlite-store.ts': 'runtime/storage/sqlite-store.ts',
  'runtime/postgres-store.ts': 'runtime/storage/postgres-store.ts',
  'runtime/sql.ts': 'runtime/storage/sql.ts',
  'runtime/group-commit.ts': 'runtime/storage/group-commit.ts',
  'runtime/slow-reads.ts': 'runtime/storage/slow-reads.ts',
  'runtime/read-worker.js': 'runtime/storage/read-worker.js',
  'runtime/schema-state.ts': 'runtime/storage/schema-state.ts',
  'runtime/schema-versions.ts': 'runtime/storage/schema-versions.ts',
  'runtime/dialect.ts': 'runtime/storage/dialect.ts',
  'runtime/scope-counts.ts': 'runtime/storage/scope-counts.ts',
  'runtime/outbox.ts': 'runtime/storage/outbox.ts',
  'runtime/count-cache.ts': 'runtime/storage/count-cache.ts',
  'runtime/storage/stored-rows.ts': 'runtime/storage/stored-rows.ts',
  'runtime/storage/open-store.ts': 'runtime/storage/open-store.ts',
  'runtime/storage/duplicate-key.ts': 'runtime/storage/duplicate-key.ts',
  'runtime/storage/natural-keys.ts': 'runtime/storage/natural-keys.ts',
  'runtime/storage/postgres-faults.ts': 'runtime/storage/postgres-faults.ts',
  // 3 tables: one table, conditions, answers from rows.
  'runtime/table.ts': 'runtime/tables/table.ts',
  'runtime/condition.ts': 'runtime/tables/condition.ts',
  'runtime/sql-condition.ts': 'runtime/tables/sql-condition.ts',
  'runtime/answer-json.ts': 'runtime/tables/answer-json.ts',
  'runtime/answer-shape.ts': 'runtime/tables/answer-shape.ts',
  // 4 lists.
  'runtime/list-request.ts': 'runtime/lists/list-request.ts',
  'runtime/page-token.ts': 'runtime/lists/page-token.ts',
  'runtime/total-count.ts': 'runtime/lists/total-count.ts',
  'runtime/lists/visibility.ts': 'runtime/lists/visibility.ts',
  // 5 resources.
  'runtime/resources.ts': 'runtime/resources/standard-methods.ts',
  'runtime/writes.ts': 'runtime/resources/writes.ts',
  'runtime/record-import.ts': 'runtime/resources/record-import.ts',
  // 6 access.
  'runtime/authorization.ts': 'runtime/access/authorization.ts',
  'runtime/issuer.ts': 'runtime/access/issuer.ts',
  'runtime/issuer-record.ts': 'runtime/operate/issuer-record.ts',
  'runtime/bootstrap.ts': 'runtime/access/bootstrap.ts',
  'runtime/email-domain.ts': 'runtime/access/email-domain.ts',
  'runtime/access/grant-changes.ts': 'runtime/resources/grant-changes.ts',
  'runtime/access/outbound.ts': 'runtime/access/outbound.ts',
  'runtime/access/root-identities.ts': 'runtime/access/root-identities.ts',
  'runtime/access/safe-pattern.ts': 'runtime/access/safe-pattern.ts',
  'runtime/access/secret-seal.ts': 'runtime/storage/secret-seal.ts',
  'runtime/access/refresh-tokens.ts': 'runtime/access/refresh-tokens.ts',
  'runtime/access/scim-tokens.ts': 'runtime/access/scim-tokens.ts',
  // 7 pipeline and events.
  'runtime/operations.ts': 'runtime/pipeline/operations.ts',
  'runtime/validation.ts': 'runtime/pipeline/validation.ts',
  'runtime/input-safety.ts': 'runtime/pipeline/input-safety.ts',
  'runtime/events/cloud-event.ts': 'runtime/events/cloud-event.ts',
  'runtime/events/delivery-worker.ts': 'runtime/events/delivery-worker.ts',
  'runtime/events/quotas.ts': 'runtime/events/quotas.ts',
  'runtime/events/retry.ts': 'runtime/events/retry.ts',
  'runtime/events/sink-address.ts': 'runtime/events/sink-address.ts',
  'runtime/events/webhook-token.ts': 'runtime/events/webhook-token.ts',
  // 8 operate.
  'runtime/config.ts': 'runtime/operate/config.ts',
  'runtime/metrics.ts': 'runtime/operate/metrics.ts',
  'runtime/metric-series.ts': 'runtime/operate/metric-series.ts',
  'runtime/rate-limit.ts': 'runtime/operate/rate-limit.ts',
  'runtime/start-up.ts': 'runtime/operate/start-up.ts',
  'runtime/open-resources.ts': 'runtime/operate/open-resources.ts',
  'runtime/operate/caller-address.ts': 'runtime/operate/caller-address.ts',
  'runtime/operate/data-dir.ts': 'runtime/storage/data-dir.ts',
  // 9 transports.
  'runtime/http.ts': 'runtime/http/app.ts',
  'runtime/http-context.ts': 'runtime/http/context.ts',
  'runtime/http-server.ts': 'runtime/http/listener.ts',
  'runtime/router.ts': 'runtime/http/router.ts',
  'runtime/route-operations.ts': 'runtime/http/route-operations.ts',
  'runtime/json-body.ts': 'runtime/http/json-body.ts',
  'runtime/cors.ts': 'runtime/http/cors.ts',
  'runtime/docs-page.ts': 'runtime/http/docs-page.ts',
  'runtime/health.ts': 'runtime/http/health.ts',
  'runtime/http/metrics-route.ts': 'runtime/http/metrics-route.ts',
  'runtime/v1/adapter.ts': 'runtime/http/v1/adapter.ts',
  'runtime/v1/rename.ts': 'runtime/http/v1/rename.ts',
  'runtime/grpc/operations.ts': 'runtime/grpc/operations.ts',
  'runtime/grpc/proto-json.ts': 'runtime/grpc/proto-json.ts',
  'runtime/grpc/proto-root.ts': 'runtime/grpc/proto-root.ts',
  'runtime/grpc/rpc.ts': 'runtime/grpc/rpc.ts',
  'runtime/grpc/same-port.ts': 'runtime/grpc/same-port.ts',
  'runtime/grpc/server.ts': 'runtime/grpc/server.ts',
  'runtime/grpc/status.ts': 'runtime/grpc/status.ts',
  'runtime/grpc/token-service.ts': 'runtime/grpc/token-service.ts',
  'runtime/grpc/v1.ts': 'runtime/grpc/v1.ts',
};

/** The folders whose code is read for paths; generated/ is not (it is made again from generator/). */
const scanned = ['runtime', 'server', 'handlers', 'generator', 'scripts', 'test', 'conformance', 'client', 'bench'];
const codeFile = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** Where the generator's emitted files live: the paths it writes as text resolve from here. */
const emittedFrom = 'generated';

const root = process.cwd();
const walk = (dir: string): string[] =>
  !fs.existsSync(dir)
    ? []
    : fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) return e.name === 'node_modules' ? [] : walk(p);
        return codeFile.test(e.name) && !e.name.endsWith('.d.ts') ? [path.relative(root, p)] : [];
      });

const unknown = walk('runtime').filter((f) => !(f in moves) && !Object.values(moves).includes(f));
if (unknown.length > 0) {
  console.error(
    `runtime/ files with no place in scripts/layout/move.ts (add them to its table):\n  ${unknown.join('\n  ')}`,
  );
  process.exit(1);
}
const moving = new Map(Object.entries(moves).filter(([from, to]) => from !== to && fs.existsSync(from)));
console.log(`${moving.size} files to move`);

/** The file or folder a relative path names, from the repository's root, or undefined if nothing is there. */
const target = (fromDir: string, spec: string): { at: string; ext: 'js' | 'as-is' } | undefined => {
  const base = path.normalize(path.join(fromDir, spec));
  if (moving.has(base) || fs.existsSync(base)) return { at: base, ext: 'as-is' };
  const ts = base.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts');
  if (ts !== base && (moving.has(ts) || fs.existsSync(ts))) return { at: ts, ext: 'js' };
  return undefined;
};
/** A path written from `fromDir` to `to` (from the root), in the form the original was written. */
const written = (fromDir: string, to: string, ext: 'js' | 'as-is', original: string): string => {
  let rel = path.relative(fromDir, to).split(path.sep).join('/');
  if (ext === 'js') rel = rel.replace(/\.ts$/, '.js').replace(/\.mts$/, '.mjs');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return original.endsWith('/') && !rel.endsWith('/') ? `${rel}/` : rel;
};

const project = new Project({ skipAddingFilesFromTsConfig: true, compilerOptions: { allowJs: true } });
// Not this file: its table names the old paths.
const self = path.relative(root, new URL(import.meta.url).pathname);
const files = scanned.flatMap(walk).filter((f) => f !== self);
let rewritten = 0;
const texts = new Map<string, string>();
for (const file of files) {
  const text = fs.readFileSync(file, 'utf8');
  const source = project.createSourceFile(`/virtual/${file}`, text, { overwrite: true });
  const oldDir = path.dirname(file);
  const newDir = path.dirname(moving.get(file) ?? file);
  const edits: { start: number; end: number; text: string }[] = [];
  source.forEachDescendant((node) => {
    if (!Node.isStringLiteral(node) && !Node.isNoSubstitutionTemplateLiteral(node)) return;
    const spec = node.getLiteralText();
    // A relative path written in code: its target moved, or the file that writes it did.
    if (/^\.\.?\//.test(spec)) {
      const t = target(oldDir, spec);
      if (!t) return;
      const to = moving.get(t.at) ?? t.at;
      if (to === t.at && newDir === oldDir) return;
      const next = written(newDir, to, t.ext, spec);
      if (next !== spec) edits.push({ start: node.getStart() + 1, end: node.getEnd() - 1, text: next });
    }
  });
  let out = text;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  // The generator writes import paths into generated/ as text: `../runtime/x.js` resolves from there.
  if (file.startsWith('generator/')) {
    out = out.replace(/\.\.\/runtime\/[\w./-]+?\.js\b/g, (m) => {
      const t = target(emittedFrom, m);
      const to = t && moving.get(t.at);
      return t && to ? written(emittedFrom, to, t.ext, m) : m;
    });
  }
  // Repository paths that code and comments name (`runtime/x.ts`, read by tests and scripts, or pointed at).
  for (const [from, to] of moving) {
    const re = new RegExp(`(?<![\\w./-])${from.replace(/[.]/g, '\\.')}(?![\\w/-])`, 'g');
    out = out.replace(re, to);
  }
  if (out !== text) {
    rewritten++;
    texts.set(file, out);
  }
}
for (const [file, out] of texts) fs.writeFileSync(file, out);
for (const [from, to] of moving) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.renameSync(from, to);
}
for (const dir of new Set([...moving.keys()].map((f) => path.dirname(f)))) {
  if (dir !== 'runtime' && fs.existsSync(dir) && fs.readdirSync(dir).length === 0) fs.rmdirSync(dir);
}
// Longer paths may break lines differently: the project's formatter settles code, and a comment line that a path
// made longer than the print width is broken at its last space that fits (the formatter leaves comments alone).
const width = 120;
/** Lines of a file, a long comment line with a path broken at its last space that fits, the rest carried into the
 * next line of the same comment (or a line of its own). */
const wrapped = (lines: string[]): string[] => {
  const out: string[] = [];
  let carry = '';
  for (const [i, original] of lines.entries()) {
    const prefix = /^(\s*(?:\/\/|\*) )/.exec(original)?.[1];
    const line = carry && prefix ? `${prefix}${carry} ${original.slice(prefix.length)}` : original;
    if (carry && !prefix) out.push(`${/^(\s*(?:\/\/|\*) )/.exec(lines[i - 1])![1]}${carry}`);
    carry = '';
    const cut = line.lastIndexOf(' ', width);
    if (prefix && line.length > width && (line.includes('runtime/') || line !== original) && cut > prefix.length) {
      out.push(line.slice(0, cut));
      carry = line.slice(cut + 1);
    } else out.push(line);
  }
  return out;
};
for (const file of scanned.flatMap(walk)) {
  const text = fs.readFileSync(file, 'utf8');
  const out = wrapped(text.split('\n')).join('\n');
  if (out !== text) fs.writeFileSync(file, out);
}
const touched = [...texts.keys()].map((f) => moving.get(f) ?? f).filter((f) => fs.existsSync(f));
if (touched.length > 0)
  execFileSync('npx', ['prettier', '--write', '--log-level', 'warn', ...touched], { stdio: 'inherit' });
console.log(`moved ${moving.size} files, rewrote paths in ${rewritten}`);
