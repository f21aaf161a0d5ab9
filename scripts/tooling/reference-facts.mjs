// node scripts/tooling/reference-facts.mjs [SHARED]: refreshes test/facts/, the reference system's facts the tests
// compare us with, from the reference material beside the repository (SHARED, default ../shared): the gRPC
// facts (data only) as they are; the OpenAPI contracts without their prose (descriptions, summaries, titles,
// examples: the reference documentation's own words, which we do not copy); the spec's section headings. The
// tests read test/facts/ only, so that a clone alone passes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const shared = process.argv[2] ?? '../shared';
const out = 'test/facts';
const prose = new Set(['description', 'summary', 'title', 'example', 'examples', 'externalDocs']);

/** value without prose keys; the names of a `properties` map are field names, kept whatever they are. */
function withoutProse(value, namesOnly = false) {
  if (Array.isArray(value)) return value.map((v) => withoutProse(v));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => namesOnly || !prose.has(k))
      .map(([k, v]) => [k, withoutProse(v, !namesOnly && k === 'properties')]),
  );
}

const write = (name, value) => writeFileSync(join(out, name), `${JSON.stringify(value, null, 1)}\n`);
mkdirSync(out, { recursive: true });
for (const name of ['grpc-v1.json', 'grpc-v2.json', 'grpc-v2beta1.json'])
  write(name, JSON.parse(readFileSync(join(shared, 'reference', name), 'utf8')));
for (const name of ['api-v1.json', 'api-v2.json'])
  write(name, withoutProse(JSON.parse(readFileSync(join(shared, 'reference', name), 'utf8'))));
const spec = readFileSync(join(shared, 'spec', 'platform-api-v2.md'), 'utf8');
write(
  'spec-sections.json',
  [...spec.matchAll(/^## (\d+)\. (.*)$/gm)].map((m) => ({ section: m[1], title: m[2] })),
);
console.log(`wrote ${out}/ from ${shared}`);
