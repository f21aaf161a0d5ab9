// /openapi.json, as served, lints clean under Spectral (spectral:oas) and Redocly (recommended): no error and no
// warning. Both linters are first shown to catch a planted fault, so that a linter configured to say nothing
// cannot pass this test.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer } from './support/server.js';

// Both packages are CommonJS; their ESM shape is a default export.
const { Spectral, Document } = spectralCore;
const { Json } = spectralParsers as unknown as { Json: ConstructorParameters<typeof Document>[1] };

/** Every Spectral finding (error, warning, information or hint) of spectral:oas, as "code at path: message". */
async function spectralFindings(text: string): Promise<string[]> {
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] });
  const results = await spectral.run(new Document(text, Json, 'openapi.json'));
  return results.map((r) => `spectral ${r.code} at ${r.path.join('.')}: ${r.message}`);
}

/** Every Redocly finding (error or warning) of its recommended rules. */
async function redoclyFindings(text: string): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: text, absoluteRef: '/openapi.json', config });
  return problems.map((p) => `redocly ${p.ruleId} (${p.severity}) at ${p.location[0]?.pointer}: ${p.message}`);
}

let served: { paths: Record<string, Record<string, Record<string, unknown>>> };
let text: string;

test.before(async () => {
  const s = await startTestServer();
  try {
    text = await (await fetch(`${s.url}/openapi.json`)).text();
    served = JSON.parse(text);
  } finally {
    await s.stop();
  }
});

test('both linters catch a planted fault (an operation without summary, id and error answers)', async () => {
  const planted = structuredClone(served);
  planted.paths['/ping/v2/ping'].get = { responses: { 200: { description: 'OK' } } };
  const plantedText = JSON.stringify(planted);
  const spectral = await spectralFindings(plantedText);
  assert.ok(
    spectral.some((f) => f.includes('operation-operationId')),
    spectral.join('\n') || 'Spectral found nothing',
  );
  const redocly = await redoclyFindings(plantedText);
  assert.ok(
    redocly.some((f) => f.includes('operation-summary')),
    redocly.join('\n') || 'Redocly found nothing',
  );
});

test('Spectral (spectral:oas) finds nothing in /openapi.json', async () => {
  assert.equal(await spectralFindings(text), []);
});

test('Redocly (recommended) finds nothing in /openapi.json', async () => {
  assert.equal(await redoclyFindings(text), []);
});

test.run();
