// What the server serves at /openapi.json is a valid OpenAPI 3.1 document, as served (not as generated).
import { validate } from '@readme/openapi-parser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer } from './support/server.js';

test('/openapi.json validates as OpenAPI 3.1', async () => {
  const s = await startTestServer();
  try {
    const res = await fetch(`${s.url}/openapi.json`);
    assert.is(res.status, 200);
    const doc = await res.json();
    assert.match(doc.openapi, /^3\.1\./);
    // validate() changes its argument.
    const result = await validate(structuredClone(doc));
    if (!result.valid) assert.unreachable(JSON.stringify(result.errors, null, 2).slice(0, 2000));
  } finally {
    await s.stop();
  }
});

test.run();
