// The import graph of runtime/ against its floors (DESIGN.md, "The target layout of runtime/"): import cycles,
// imports that point up the floors, and files left at runtime/'s top. Type-only imports count: a reader cannot
// tell them apart by the folder. test/layers.test.ts keeps the graph clean; `npx tsx scripts/tooling/layers.ts`
// prints where it stands.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The floors from the bottom: a folder imports only its own floor and the ones below. */
export const floors = [
  ['model'],
  ['storage'],
  ['tables'],
  ['lists'],
  ['resources'],
  ['access'],
  ['pipeline', 'events'],
  ['operate'],
  ['http', 'grpc'],
];

export interface LayerReport {
  /** files, from the repository's root */
  files: string[];
  /** each a set of files that import one another round */
  cycles: string[][];
  /** `from -> to`, to on a higher floor */
  up: string[];
  /** files at runtime/'s top (but the face) or in a folder of no floor */
  unplaced: string[];
}

/** What generated code imports: above every floor, so that nothing in runtime/ may import it. */
export const face = 'runtime/index.ts';

const codeFile = /\.(ts|mts|js|mjs)$/;
const importPath = /(?:^|\n)\s*(?:import|export)[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return filesUnder(p);
    return codeFile.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The file a relative import names (written with .js for a .ts file), or undefined for a package. */
function resolved(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), spec);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`];
  return candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
}

/** Tarjan's strongly connected components of more than one file. */
function cyclesOf(edges: Map<string, Set<string>>): string[][] {
  let next = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component);
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

export function layerReport(at: string): LayerReport {
  const root = path.resolve(at);
  const runtime = path.join(root, 'runtime');
  const files = filesUnder(runtime);
  const floorOf = (file: string) =>
    file === path.join(root, face)
      ? floors.length
      : floors.findIndex((f) => f.includes(path.relative(runtime, file).split(path.sep)[0]));
  const edges = new Map(files.map((f) => [f, new Set<string>()]));
  for (const f of files) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(importPath)) {
      const to = resolved(f, m[1] ?? m[2]);
      if (to?.startsWith(runtime + path.sep)) edges.get(f)!.add(to);
    }
  }
  const rel = (f: string) => path.relative(root, f).split(path.sep).join('/');
  const up = [...edges].flatMap(([f, tos]) =>
    [...tos].filter((t) => floorOf(f) >= 0 && floorOf(t) > floorOf(f)).map((t) => `${rel(f)} -> ${rel(t)}`),
  );
  return {
    files: files.map(rel),
    cycles: cyclesOf(edges).map((c) => c.map(rel)),
    up,
    unplaced: files.filter((f) => floorOf(f) < 0).map(rel),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const r = layerReport(process.argv[2] ?? '.');
  for (const c of r.cycles) console.log(`cycle: ${c.join(' <-> ')}`);
  for (const u of r.up) console.log(`up: ${u}`);
  for (const u of r.unplaced) console.log(`unplaced: ${u}`);
  console.log(
    `runtime: ${r.files.length} files, ${r.cycles.length} cycles, ${r.up.length} imports up, ${r.unplaced.length} unplaced`,
  );
  process.exit(r.cycles.length + r.up.length + r.unplaced.length === 0 ? 0 : 1);
}
