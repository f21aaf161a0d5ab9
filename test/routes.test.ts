// Route precedence, in the table the generator builds from spec/ (generator/routes-table.ts) and in the router it
// emits from that table: custom methods before uid routes, uids that span segments (raw or %2F), sub-resources
// and endpoints below a uid before the uid itself, and no uid that swallows a ":verb". No server is started.
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildOpenApi } from '../generator/emit-openapi.js';
import { protoSurface } from '../generator/proto-model.js';
import { emitRouter } from '../generator/emit-typescript.js';
import { routesOf, type Route } from '../generator/routes-table.js';
import { loadSpec } from '../generator/spec.js';
import { matchTemplate, readTemplate } from '../runtime/http/route-template.js';

const model = loadSpec('spec');
const routes = routesOf(model);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const org = hex(20);
const repo = `${org}/${hex(8)}`;
const digest = `sha256:${hex(32)}`;

const nameOf = (r: Route) => `${r.method} ${r.path} (${r.kind} ${r.resource?.collection ?? r.endpoint?.name})`;

/**
 * The route that answers a request and its raw captures: the first in table order whose method and template match
 * the raw path, as runtime/http/router.ts runs them (ctx.path is not decoded; the runtime decodes captures).
 */
function answering(method: string, path: string): { route: string; params: Record<string, string> } | undefined {
  for (const r of routes) {
    const m = r.method === method ? matchTemplate(readTemplate(r.template), path) : undefined;
    if (m) return { route: nameOf(r), params: Object.fromEntries(r.params.map((p, i) => [p, m[i]])) };
  }
  return undefined;
}

function only(method: Route['method'], path: string, kind: Route['kind'], name: string): string {
  const found = routes.filter(
    (r) =>
      r.method === method &&
      r.path === path &&
      r.kind === kind &&
      (r.resource?.collection ?? r.endpoint?.name) === name,
  );
  assert.is(found.length, 1, `one route ${method} ${path} ${kind} ${name}`);
  return nameOf(found[0]);
}

test('custom methods and literal segments are matched before the collection and uid routes', () => {
  assert.equal(answering('GET', '/iam/v2/identities:lookupIdentity'), {
    route: only('GET', '/iam/v2/identities:lookupIdentity', 'endpoint', 'lookupIdentity'),
    params: {},
  });
  assert.equal(answering('POST', '/iam/v2/groupInvites:accept'), {
    route: only('POST', '/iam/v2/groupInvites:accept', 'endpoint', 'acceptGroupInvite'),
    params: {},
  });
  assert.equal(answering('GET', '/libraries/v2/artifacts/count'), {
    route: only('GET', '/libraries/v2/artifacts/count', 'endpoint', 'getArtifactCount'),
    params: {},
  });
});

test('a uid route takes the whole multi-segment uid, raw or with %2F', () => {
  const get = only('GET', '/registry/v2/repos/{uid}', 'get', 'repos');
  assert.equal(answering('GET', `/registry/v2/repos/${repo}`), { route: get, params: { uid: repo } });
  const escaped = answering('GET', `/registry/v2/repos/${repo.replace('/', '%2F')}`);
  assert.equal(escaped, { route: get, params: { uid: repo.replace('/', '%2F') } });
  assert.is(decodeURIComponent(escaped!.params.uid), repo);
  const tag = `${repo}/${hex(8)}`;
  assert.equal(answering('DELETE', `/registry/v2/tags/${tag}`), {
    route: only('DELETE', '/registry/v2/tags/{uid}', 'delete', 'tags'),
    params: { uid: tag },
  });
  assert.equal(answering('POST', `/registry/v2/tags/${repo}`), {
    route: only('POST', '/registry/v2/tags/{parent}', 'create', 'tags'),
    params: { parent: repo },
  });
});

test('sub-resources and endpoints below a uid are matched before the uid routes', () => {
  for (const uid of [repo, repo.replace('/', '%2F')]) {
    assert.equal(answering('GET', `/registry/v2/repos/${uid}/readme`), {
      route: only('GET', '/registry/v2/repos/{uid}/readme', 'subresourceGet', 'repos'),
      params: { uid },
    });
    assert.equal(answering('PATCH', `/registry/v2/repos/${uid}/readme`), {
      route: only('PATCH', '/registry/v2/repos/{uid}/readme', 'subresourceUpdate', 'repos'),
      params: { uid },
    });
    // A digest holds ":" and stays one segment; the uid before it may span several.
    assert.equal(answering('GET', `/registry/v2/repos/${uid}/digests/${digest}/size`), {
      route: only('GET', '/registry/v2/repos/{repoUid}/digests/{digest}/size', 'endpoint', 'getSize'),
      params: { repoUid: uid, digest },
    });
  }
  const artifact = `${org}/${hex(8)}`;
  assert.equal(answering('GET', `/libraries/v2/artifacts/${artifact}/versions`), {
    route: only('GET', '/libraries/v2/artifacts/{parent}/versions', 'list', 'artifactVersions'),
    params: { parent: artifact },
  });
});

test('a uid capture never swallows a ":verb" suffix', () => {
  assert.is(answering('POST', `/iam/v2/groups/${org}:undelete`), undefined);
  assert.is(answering('GET', `/registry/v2/repos/${repo}:export`), undefined);
  assert.is(answering('GET', `/registry/v2/repos/${repo.replace('/', '%2F')}:export`), undefined);
  assert.is(answering('PATCH', `/registry/v2/repos/${repo}/readme:publish`), undefined);
  assert.is(answering('POST', '/iam/v2/groupInvites:decline'), undefined, 'an unserved verb on a collection');
});

/** A path for the route's template: a multi-segment uid for each uid capture, a digest for a single segment. */
function pathFor(r: Route, escape: boolean): { path: string; params: Record<string, string> } {
  const { captures } = readTemplate(r.template);
  const params = Object.fromEntries(
    r.params.map((p, i) => [p, captures[i].spans ? (escape ? repo.replace('/', '%2F') : repo) : digest]),
  );
  return { path: r.path.replace(/\{(\w+)\}/g, (_, p: string) => params[p]), params };
}

test('every route answers the paths made from its own template, and none answers them with a ":verb" added', () => {
  for (const r of routes) {
    for (const escape of [false, true]) {
      const { path, params } = pathFor(r, escape);
      assert.equal(answering(r.method, path), { route: nameOf(r), params }, `${r.method} ${path}`);
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE'])
        assert.is(answering(method, `${path}:frobnicate`), undefined, `${method} ${path}:frobnicate`);
    }
  }
});

test("v1's own calls are routes of the table under /<prefix or domain>/v1/, and not in v2's documents", async () => {
  assert.is(answering('POST', '/auth/v1/register')?.route, only('POST', '/auth/v1/register', 'endpoint', 'register'));
  assert.equal(answering('GET', `/registry/v1/repos/${repo}/digests/${digest}/vulnreport`)?.params, {
    uid: repo,
    digest,
  });
  for (const path of ['/registry/v1/eoltags', '/registry/v1/vuln_reports', '/registry/v1/vuln_reports/counts'])
    assert.ok(answering('GET', path), path);
  const openapi = await buildOpenApi(model, routes, protoSurface(model, []));
  const paths = Object.keys(openapi.paths as object);
  assert.ok(paths.length > 0);
  assert.equal(
    paths.filter((p) => p.includes('/v1/')),
    [],
  );
  assert.not.ok(Object.keys((openapi.components as { schemas: object }).schemas).includes('RegisterResponse'));
});

test("the emitted router registers the table's routes in the table's order", () => {
  const registered = [...emitRouter(model, routes).matchAll(/^\s*router\.(\w+)\('(.*?)', /gm)].map(
    ([, method, template]) => `${method.toUpperCase()} ${template}`,
  );
  assert.equal(
    registered,
    routes.map((r) => `${r.method} ${r.template}`),
  );
});

test.run();
