// The generator's goldens: what it emits for the widgets fixture (test/fixtures/widgets.yaml, served as the
// gadgets domain beside spec/), cut down to the parts that show its work for that one resource, so that a change
// elsewhere in spec/ leaves them alone. test/golden.test.ts compares them; `npm run golden -- --update` rewrites them.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { structuredPatch } from 'diff';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import type { ApiModel } from '../../runtime/model/api-model.js';

export const goldenDir = 'test/golden/widgets';
export const refreshCommand = 'npm run golden -- --update';
const fixture = 'test/fixtures/widgets.yaml';
const collection = 'widgets';
const domain = 'gadgets';

/** Generates spec/ plus the fixture under scratch (inside the project: generated code resolves node_modules). */
export function generateFixture(scratch: string): string {
  const spec = join(scratch, 'spec');
  const out = join(scratch, 'generated');
  cpSync('spec', spec, { recursive: true });
  cpSync(fixture, join(spec, `${domain}.yaml`));
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'generator/main.ts', '--spec', spec, '--out', out], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`generating the widgets fixture failed:\n${r.stderr}`);
  return out;
}

/** The golden files, by name, from a generated directory. */
export async function widgetParts(generated: string): Promise<Record<string, string>> {
  const read = (name: string) => readFileSync(join(generated, name), 'utf8');
  const { apiModel } = (await import(pathToFileURL(join(generated, 'model.ts')).href)) as { apiModel: ApiModel };
  return {
    'model.json': json(modelPart(apiModel)),
    'openapi.json': json(openApiPart(JSON.parse(read('openapi.json')))),
    'entities.txt': entityPart(read('entities.ts')),
    'routes.txt': routerPart(read('routes.ts')),
    'gadgets.proto': read('proto/example/gadgets/v1/gadgets.proto'),
    'grpc.txt': `${read('grpc.ts')
      .split('\n')
      .filter((line) => line.includes(`.${collection}`))
      .join('\n')}\n`,
    'validators-bodies.txt': validatorPart(read('validators/bodies.cjs')),
    'validators-queries.txt': validatorPart(read('validators/queries.cjs')),
    'conformance-plan.json': json(planPart(JSON.parse(read('conformance/plan.json')))),
  };
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** The resource's entry, its capabilities, which built-in roles grant them, and the parents that list it as a child. */
function modelPart(model: ApiModel) {
  const resource = model.resources[collection];
  const own = new Set(
    Object.values(resource.operations).flatMap((o) => (Array.isArray(o.capability) ? o.capability : [])),
  );
  return {
    resource,
    capabilities: Object.fromEntries(Object.entries(model.capabilities).filter(([name]) => own.has(name))),
    roles: Object.fromEntries(
      model.roles.map((r) => [r.name, r.capabilities.filter((c) => own.has(c))]).filter(([, caps]) => caps.length > 0),
    ),
    childOf: Object.values(model.resources)
      .filter((r) => r.children.includes(collection))
      .map((r) => r.collection),
  };
}

type OpenApi = {
  tags: { name: string }[];
  paths: Record<string, unknown>;
  components: { schemas: Record<string, unknown> };
};

/** The domain's tag and paths, and every component schema they reach. */
function openApiPart(doc: OpenApi) {
  const paths = Object.fromEntries(Object.entries(doc.paths).filter(([path]) => path.startsWith(`/${domain}/`)));
  const reached = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object') {
      for (const [key, v] of Object.entries(value)) {
        const name = key === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '') : undefined;
        if (name !== undefined && !reached.has(name)) {
          reached.add(name);
          visit(doc.components.schemas[name]);
        } else visit(v);
      }
    }
  };
  visit(paths);
  const schemas = Object.fromEntries(Object.entries(doc.components.schemas).filter(([name]) => reached.has(name)));
  return { tags: doc.tags.filter((t) => t.name === domain), paths, components: { schemas } };
}

type Plan = { resources: { collection: string }[]; rules: { name: string }[] };

function planPart(plan: Plan) {
  return {
    resources: plan.resources.filter((r) => r.collection === collection),
    rules: plan.rules.filter((r) => r.name.startsWith(`${domain}.${collection}/`)),
  };
}

const parse = (name: string, text: string, kind: ts.ScriptKind) =>
  ts.createSourceFile(name, text, ts.ScriptTarget.ES2022, true, kind);

/** The resource's EntitySchema, as emitted. */
function entityPart(text: string): string {
  const file = parse('entities.ts', text, ts.ScriptKind.TS);
  let found: string | undefined;
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && node.expression.getText(file) === 'EntitySchema') {
      const spec = node.arguments?.[0];
      if (
        spec &&
        ts.isObjectLiteralExpression(spec) &&
        spec.properties.some((p) => p.getText(file) === `"tableName": "${collection}"`)
      )
        found = node.getText(file);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  if (found === undefined) throw new Error(`entities.ts has no EntitySchema for ${collection}`);
  return `${found}\n`;
}

/** The router's and handler interfaces' lines that name the resource or its domain, as emitted. */
function routerPart(text: string): string {
  const lines = text.split('\n').filter((l) => new RegExp(`${collection}|${domain}`, 'i').test(l));
  if (lines.length === 0) throw new Error(`routes.ts has no line for ${collection}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The resource's validators from AJV's standalone code, one statement per line and blocks opened up, so that a
 * diff shows the change. AJV numbers its names (validate15, pattern2) across the whole file and defines a shared
 * helper (a format, a pattern) where some validator first needs it: here names are numbered from their first use
 * in this part and helpers come first, so that resources added elsewhere do not change it. (AJV's sourceURL
 * comments, which repeat each schema's $id, do not survive the printing.)
 */
function validatorPart(code: string): string {
  const file = parse('validators.cjs', code, ts.ScriptKind.JS);
  const exportName = (s: ts.Statement) => {
    if (!ts.isExpressionStatement(s) || !ts.isBinaryExpression(s.expression)) return undefined;
    const target = s.expression.left;
    return ts.isPropertyAccessExpression(target) && target.expression.getText(file) === 'exports'
      ? target.name.text
      : undefined;
  };
  const declared = new Map<string, ts.Statement>();
  for (const s of file.statements) {
    if (ts.isFunctionDeclaration(s) && s.name) declared.set(s.name.text, s);
    if (ts.isVariableStatement(s))
      for (const d of s.declarationList.declarations) declared.set(d.name.getText(file), s);
  }
  // Each validator's statements follow its `exports.<collection>_<kind> = validateN;`.
  const own: ts.Statement[] = [];
  let inPart = false;
  for (const s of file.statements) {
    const name = exportName(s);
    if (name !== undefined) inPart = name.startsWith(`${collection}_`);
    if (inPart) own.push(s);
  }
  const isHelper = (s: ts.Statement) =>
    ts.isVariableStatement(s) && !/^schema\d+$/.test(s.declarationList.declarations[0].name.getText(file));
  const helpers = new Set(own.filter(isHelper));
  const uses = (s: ts.Statement) => {
    const names: string[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node) && declared.has(node.text)) names.push(node.text);
      ts.forEachChild(node, visit);
    };
    visit(s);
    return names;
  };
  for (let added = [...own]; added.length > 0;) {
    added = added
      .flatMap(uses)
      .map((n) => declared.get(n)!)
      .filter((d) => isHelper(d) && !helpers.has(d));
    added.forEach((d) => helpers.add(d));
  }
  const body = own.filter((s) => !helpers.has(s));
  const renamed = new Map<string, string>();
  const counters = new Map<string, number>();
  for (const name of [...body, ...helpers].flatMap(uses)) {
    const numbered = /^(.*\D)\d+$/.exec(name);
    if (!numbered || renamed.has(name)) continue;
    const prefix = numbered[1];
    const n = counters.get(prefix) ?? 0;
    counters.set(prefix, n + 1);
    renamed.set(name, `${prefix}${n}`);
  }
  const printed = (s: ts.Statement) => print(s, file).replace(/\b[A-Za-z_$][\w$]*\b/g, (id) => renamed.get(id) ?? id);
  const helperLines = [...helpers].map(printed).sort(byName);
  return `${[...helperLines, ...body.map(printed)].join('\n')}\n`;
}

/** Sorts helper lines ("const pattern1 = ...") by name, numbers compared as numbers. */
const byName = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed });

/** A statement printed with every block on lines of its own (AJV writes a whole function on one line). */
function print(statement: ts.Statement, file: ts.SourceFile): string {
  const openBlocks: ts.TransformerFactory<ts.Node> = (context) => (root) => {
    const visit = (node: ts.Node): ts.Node => {
      const visited = ts.visitEachChild(node, visit, context);
      return ts.isBlock(visited) ? ts.factory.createBlock(visited.statements, true) : visited;
    };
    return ts.visitNode(root, visit);
  };
  const result = ts.transform(statement, [openBlocks]);
  try {
    return printer.printNode(ts.EmitHint.Unspecified, result.transformed[0], file);
  } finally {
    result.dispose();
  }
}

/**
 * How the parts differ from the goldens in dir: for each file that differs, is missing or is no longer made, its
 * name and a short diff; then the command that refreshes them. Empty when every byte matches.
 */
export function compareWithGoldens(parts: Record<string, string>, dir = goldenDir): string {
  const stored = existsSync(dir) ? readdirSync(dir) : [];
  const reports: string[] = [];
  for (const [name, text] of Object.entries(parts)) {
    const path = join(dir, name);
    if (!existsSync(path)) reports.push(`${path}: missing`);
    else {
      const golden = readFileSync(path, 'utf8');
      if (golden !== text)
        reports.push(`${path} differs from what the generator emits now:\n${lineDiff(golden, text)}`);
    }
  }
  for (const name of stored.filter((n) => !(n in parts)).sort())
    reports.push(`${join(dir, name)}: no longer generated`);
  if (reports.length === 0) return '';
  return `${reports.join('\n')}\nIf the change is intended, refresh the goldens with \`${refreshCommand}\` and review their diff.\n`;
}

/** Writes the parts as the goldens in dir, removing goldens no longer made; returns the names that changed. */
export function writeGoldens(parts: Record<string, string>, dir = goldenDir): string[] {
  mkdirSync(dir, { recursive: true });
  const changed: string[] = [];
  for (const name of readdirSync(dir).filter((n) => !(n in parts))) {
    rmSync(join(dir, name));
    changed.push(name);
  }
  for (const [name, text] of Object.entries(parts)) {
    const path = join(dir, name);
    if (existsSync(path) && readFileSync(path, 'utf8') === text) continue;
    writeFileSync(path, text);
    changed.push(name);
  }
  return changed.sort();
}

/**
 * A unified-style diff of two texts by lines (jsdiff's), two lines of context, cut after limit differing lines:
 * enough to see what changed without flooding a test report.
 */
export function lineDiff(before: string, after: string, limit = 40): string {
  const { hunks } = structuredPatch('golden', 'generated', before, after, undefined, undefined, { context: 2 });
  const out: string[] = [];
  let shown = 0;
  let changes = 0;
  for (const hunk of hunks) {
    // jsdiff's marker for a last line without a newline is no line of either text.
    const lines = hunk.lines.filter((l) => !l.startsWith('\\'));
    changes += lines.filter((l) => l[0] !== ' ').length;
    if (shown >= limit) continue;
    out.push(`@@ -${hunk.oldStart} +${hunk.newStart} @@`);
    for (const l of lines) {
      if (shown >= limit) break;
      out.push(`${l[0]} ${l.slice(1)}`);
      if (l[0] !== ' ') shown++;
    }
  }
  if (changes > shown) out.push(`... and ${changes - shown} more differing lines`);
  return out.join('\n');
}
