// npm run generate [-- --spec DIR --out DIR]: spec/ -> generated/ (wiped first).
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from '../scripts/cli-args.js';
import { sourceHashes, sourceRecordFile } from '../scripts/source-hash.mjs';
import { emitClient } from './emit-client.js';
import { emitConformancePlan } from './emit-conformance.js';
import { buildOpenApi } from './emit-openapi.js';
import { banner, emitEntities, emitModel, emitRouter, emitTypes } from './emit-typescript.js';
import { emitValidators } from './emit-validators.js';
import { emitGrpcTable, emitProtoFiles } from './emit-proto.js';
import { protoSurface } from './proto-model.js';
import { routesOf } from './routes-table.js';
import { loadSpec, SpecError, specOrigins } from './spec.js';
import { ProtoNumbering, protoLockFile, readProtoLock, writeProtoLock } from './proto-lock.js';
import { lockFile, writeSchemaLock } from './schema-lock.js';

const { values } = parseCommandLine({
  name: 'generate',
  usage: `
usage: npm run generate [-- --spec DIR] [--out DIR]
Reads and validates the spec and writes everything generated (wiped first).
  --spec DIR   the spec (default spec)
  --out DIR    where to write (default generated)`,
  options: { spec: { type: 'string', default: 'spec' }, out: { type: 'string', default: 'generated' } },
});
const started = performance.now();
// This checkout, whose generator, client engine and spec modules a new API's project generates with too.
const framework = fileURLToPath(new URL('..', import.meta.url));

/**
 * The framework's runtime as generated code in `out` imports it, by a path that resolves from there: a project's
 * (npm run new-api) by its node_modules/platform-api link, so that the project typechecks on its own with the one
 * copy of the runtime its handlers import; else this checkout's runtime, relative (../runtime/index.js for the Platform).
 */
function runtimeImport(out: string): string {
  const link = join(resolve(out), '..', 'node_modules', 'platform-api');
  if (existsSync(link) && realpathSync(link) === realpathSync(framework)) return 'platform-api/runtime/index.js';
  const path = relative(resolve(out), join(framework, 'runtime', 'index.js'))
    .split(sep)
    .join('/');
  return path.startsWith('.') ? path : `./${path}`;
}

try {
  // Taken before reading: a source changed meanwhile makes the record stale, and ensure-ready regenerate.
  let sources = sourceHashes(values.spec, framework);
  const model = loadSpec(values.spec!);
  // The stored shape this spec has (spec/schema.lock.json), committed with it; recorded in the sources too.
  const locked = writeSchemaLock(values.spec!, model);
  if (locked) sources = sourceHashes(values.spec, framework);
  const routes = routesOf(model);
  const problems: string[] = [];
  // What the spec does not number is numbered from spec/proto.lock.json, and recorded there (commit it too).
  const numbering = new ProtoNumbering(readProtoLock(values.spec!), problems);
  const surface = protoSurface(model, problems, numbering, specOrigins(model));
  if (problems.length > 0) throw new SpecError(problems);
  const numbered = writeProtoLock(values.spec!, numbering.next);
  if (numbered) sources = sourceHashes(values.spec);
  const out = values.out!;
  const runtime = runtimeImport(out);
  const openapi = await buildOpenApi(model, routes, surface);
  const validators = emitValidators(model);
  const protos = Object.entries(emitProtoFiles(surface)).map(([path, text]) => [`proto/${path}`, text]);
  const files: Record<string, string> = {
    'model.ts': emitModel(model, runtime),
    'entities.ts': emitEntities(model),
    'routes.ts': emitRouter(model, routes, runtime),
    'grpc.ts': emitGrpcTable(model, surface, runtime),
    ...Object.fromEntries(protos),
    'types.ts': emitTypes(model, runtime),
    ...Object.fromEntries(Object.entries(emitClient(model, routes, banner)).map(([p, t]) => [`client/${p}`, t])),
    'openapi.json': `${JSON.stringify({ 'x-generated': banner.slice(3), ...openapi }, null, 2)}\n`,
    'validators/bodies.cjs': `${banner}\n${validators.bodies}\n`,
    'validators/queries.cjs': `${banner}\n${validators.queries}\n`,
    'conformance/plan.json': `${JSON.stringify({ $comment: banner.slice(3), ...emitConformancePlan(model, routes, surface.rpcs) }, null, 2)}\n`,
    [sourceRecordFile]: `${JSON.stringify({ $comment: banner.slice(3), ...sources }, null, 2)}\n`,
  };
  rmSync(out, { recursive: true, force: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(out, name, '..'), { recursive: true });
    writeFileSync(join(out, name), text);
  }
  const ms = Math.round(performance.now() - started);
  console.log(
    `generated ${Object.keys(files).length} files in ${relative('.', out) || '.'}/ from ${model.domains.length} domains, ` +
      `${Object.keys(model.resources).length} resources, ${routes.length} routes, ${surface.rpcs.length} rpcs in ${ms} ms`,
  );
  for (const name of Object.keys(files)) console.log(`  ${join(out, name)}`);
  if (numbered)
    console.log(`recorded new gRPC numbers in ${join(values.spec!, protoLockFile)}: commit it with the spec`);
  if (locked)
    console.log(
      `recorded the stored shape of schemaVersion ${model.schemaVersion} in ${join(values.spec!, lockFile)}: commit it with the spec`,
    );
} catch (e) {
  if (e instanceof SpecError) {
    console.error(`npm run generate: the spec has ${e.problems.length} problem(s); nothing was generated:`);
    for (const p of e.problems) console.error(`  ${p}`);
  } else {
    console.error(`npm run generate failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  process.exit(1);
}
