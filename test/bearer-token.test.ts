// runtime/access/bearer-token.ts reads the usual "Bearer <token>" without its pattern: for every credential it
// must give what the pattern gives, whitespace of every kind `\s` knows included.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bearerToken } from '../runtime/access/bearer-token.js';

const pattern = /^Bearer +([^\s]+) *$/i;
const pieces = ['Bearer', 'bearer', 'BEARER', 'Basic', ' ', '  ', 'abc.def-_', 'x', '=', '.', '\t', '\n', '\v', '\f'];
const unicodeSpaces = ['\r', '\xa0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000'];

test('gives what the pattern gives, for 200,000 credentials made of schemes, tokens and whitespace', () => {
  let seed = 20261127;
  const next = (n: number) => ((seed = (Math.imul(seed, 48271) >>> 0) % 2147483647), seed % n);
  const all = [...pieces, ...unicodeSpaces, '\ufeff'];
  let differences = 0;
  let tokens = 0;
  for (let i = 0; i < 200_000; i++) {
    let credential = next(3) === 0 ? '' : 'Bearer ';
    for (let k = next(6); k > 0; k--) credential += all[next(all.length)];
    const want = pattern.exec(credential)?.[1];
    if (bearerToken(credential) !== want) differences++;
    if (want !== undefined) tokens++;
  }
  assert.is(differences, 0);
  assert.ok(tokens > 10_000, `credentials with a token among them: ${tokens}`);
});

test('the usual form, and each kind of whitespace inside the token', () => {
  assert.is(bearerToken('Bearer abc.def'), 'abc.def');
  for (const space of [' ', '\t', '\v', '\f', '\r', '\n', ...unicodeSpaces, '\ufeff'])
    assert.is(bearerToken(`Bearer abc${space}def`), undefined, JSON.stringify(space));
  assert.is(bearerToken('Bearer '), undefined);
  assert.is(bearerToken('Bearer abc  '), 'abc');
  assert.is(bearerToken('bearer  abc'), 'abc');
});

test.run();
