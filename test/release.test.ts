// The release: one version in package.json, spec/api.yaml, CHANGELOG.md and the served contract; a license the
// contract names as the LICENSE file grants it.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const api = parse(readFileSync('spec/api.yaml', 'utf8'));
const contract = JSON.parse(readFileSync('generated/openapi.json', 'utf8'));

test('package.json, spec/api.yaml, the contract and the changelog name the same semantic version', () => {
  assert.match(pkg.version, /^\d+\.\d+\.\d+$/);
  assert.is(api.release, pkg.version);
  assert.is(contract.info.version, pkg.version);
  const released = [...readFileSync('CHANGELOG.md', 'utf8').matchAll(/^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$/gm)];
  assert.ok(released.length > 0, 'CHANGELOG.md records releases as "## [x.y.z] - yyyy-mm-dd"');
  assert.is(released[0][1], pkg.version, 'the latest release in CHANGELOG.md is the version');
  const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
  assert.equal([lock.version, lock.packages[''].version], [pkg.version, pkg.version]);
});

test('the contract is licensed as LICENSE is, Apache-2.0, and tells a consumer how to authenticate', () => {
  assert.match(readFileSync('LICENSE', 'utf8'), /^\s+Apache License\s+Version 2\.0, January 2004/);
  assert.equal(contract.info.license, { name: 'Apache-2.0', identifier: 'Apache-2.0' });
  assert.is(pkg.license, 'Apache-2.0');
  assert.match(contract.info.description, /\/sts\/exchange/);
  assert.match(contract.info.description, /\/docs/);
  assert.not.match(contract.info.description, /Do not edit/);
});

test.run();
