// This API's own rules: what the Platform's spec says of particular resources (the built-in viewer role, hydrated
// role bindings, tags, v1 beside v2) and of its gRPC surfaces (the v2beta1 names, the token service). A plan
// of another API names none of them.
import { expect, expectError, expectOk, Skip, statusOf } from './client.js';
import { type ApiCheck, expectNoDeprecation, forgedToken, missingUid, rfc3339ms, unset } from './fixture.js';

/** Rules about the API as a whole, beyond any one resource's (spec sections 2, 4, 5 and 9). */
export const apiShapeChecks: Record<string, ApiCheck> = {
  'api/built-in-viewer-role': async (fx) => {
    const roles = fx.resource('roles');
    const x = await fx.client.call('GET', `${roles.base}?name=viewer`);
    const viewer = expectOk(x, 'list roles named viewer').roles?.find((r: any) => r.name === 'viewer');
    expect(!!viewer, 'a built-in role named viewer', x.body, x);
    expect(/^[0-9a-f]+$/.test(viewer.uid), "a built-in role's uid: plain hexadecimal", viewer.uid, x);
    // The suite's own group is a root group unless --parent named another.
    if (!fx.root.includes('/'))
      expect(/^[0-9a-f]+$/.test(fx.root), "a root group's uid: plain hexadecimal", fx.root, x);
  },
  'api/identity-create-shows-last-seen': async (fx) => {
    const identities = fx.resource('identities');
    const x = await fx.client.call('POST', `${identities.base}/${fx.root}`, await fx.variant(identities));
    const made = expectOk(x, 'create an identity');
    fx.created.push({ base: identities.base, uid: made.uid });
    expect(rfc3339ms.test(made.lastSeenTime ?? ''), 'lastSeenTime in the create answer', made.lastSeenTime, x);
  },
  'api/role-binding-hydrated': async (fx) => {
    const [identities, roles, bindings] = ['identities', 'roles', 'roleBindings'].map((c) => fx.resource(c));
    const who = await fx.create(identities, fx.root);
    const viewer = expectOk(await fx.client.call('GET', `${roles.base}?name=viewer`), 'viewer').roles?.[0];
    if (!viewer) throw new Skip('the target has no viewer role');
    const x = await fx.client.call('POST', `${bindings.base}/${fx.root}`, {
      identityUid: who.uid,
      roleUid: viewer.uid,
    });
    const b = expectOk(x, 'create a role binding');
    fx.created.push({ base: bindings.base, uid: b.uid });
    // Every nested field the spec documents; over gRPC an empty string is not on the wire, so it may be absent.
    const has = (o: any, keys: string[]) =>
      typeof o === 'object' &&
      o !== null &&
      keys.every((k) => typeof o[k] === 'string' || (x.rpc !== undefined && o[k] === undefined));
    const named = ['uid', 'name', 'description'];
    expect(
      has(b.identity, [...named, 'subject', 'issuer']) && b.identity.uid === who.uid,
      'identity {uid, name, description, subject, issuer}',
      b.identity,
      x,
    );
    expect(has(b.group, named) && b.group.uid === fx.root, `group {uid: ${fx.root}, name, description}`, b.group, x);
    expect(has(b.role, named) && b.role.uid === viewer.uid, 'role {uid, name, description}', b.role, x);
    expect(rfc3339ms.test(b.createTime ?? ''), 'createTime', b.createTime, x);
    expect(b.updateTime === undefined, 'no updateTime in the create answer', b.updateTime, x);
  },
  'api/tags-deprecated-listed': async (fx) => {
    const [repos, tags] = ['repos', 'tags'].map((c) => fx.resource(c));
    const repo = await fx.create(repos, fx.root);
    const current = await fx.create(tags, repo.uid);
    const old = await fx.create(tags, repo.uid, { ...(await fx.variant(tags)), deprecated: true });
    const x = await fx.client.call('GET', `${tags.base}?uidp.children_of=${repo.uid}`);
    const listed = expectOk(x, "list the repo's tags").tags ?? [];
    // Spec 4 rule 6: no server-side filter on deprecated; clients filter the listed tags themselves.
    const uids = listed.map((t: any) => t.uid);
    expect(
      uids.includes(current.uid) && uids.includes(old.uid),
      'the deprecated tag listed beside the current one',
      uids,
      x,
    );
    for (const t of listed) {
      expect(typeof t.name === 'string' && t.name.length > 0, 'a tag name', t, x);
      expect(/^sha256:[0-9a-f]+$/.test(t.digest ?? ''), 'a digest sha256:<hex>', t.digest, x);
      expect(rfc3339ms.test(t.updateTime ?? ''), 'updateTime', t.updateTime, x);
    }
    const shown = listed.find((t: any) => t.uid === old.uid);
    expect(shown.deprecated === true, 'deprecated: true on the end-of-life tag', shown, x);
    expect(
      unset(listed.find((t: any) => t.uid === current.uid).deprecated),
      'the current tag not deprecated',
      listed,
      x,
    );
  },
  'api/v1-beside-v2': async (fx) => {
    // Spec 9.1 gives the v1 prefixes; /iam/v1/groups is the reference's v1 list of groups.
    const x = await fx.client.call('GET', '/iam/v1/groups');
    expect(
      x.status === 200,
      'v1 answering with the same token as v2 (HTTP 200)',
      `HTTP ${x.status} ${JSON.stringify(x.body)}`,
      x,
    );
    expectNoDeprecation(x);
  },
};

/** Rules of the gRPC surfaces no HTTP route mirrors: the v2 services under their v2beta1 names, the token service. */
export const grpcSurfaceChecks: Record<string, ApiCheck> = {
  'api/v2beta1-names': async (fx) => {
    if (!fx.client.rpc) throw new Skip('the v2beta1 names are names of gRPC services (run with --protocol grpc)');
    const repos = fx.resource('repos');
    const rpcOf = (method: string, path: string) => {
      const found = fx.plan.rpcs.find((r) => r.method === method && r.path === path);
      if (!found) throw new Skip(`the plan has no rpc for ${method} ${path}`);
      return found.grpc;
    };
    const made = await fx.create(repos, fx.root);
    const get = rpcOf('GET', `${repos.base}/{uid}`);
    const list = rpcOf('GET', repos.base);
    const beta = (path: string) => path.replace(`.${fx.plan.version}.`, '.v2beta1.');
    const x = await fx.client.rpc(beta(get), { uid: made.uid });
    if (x.status === statusOf[12]) throw new Skip(`the target does not serve ${beta(get)} (UNIMPLEMENTED)`);
    const v2 = expectOk(await fx.client.rpc(get, { uid: made.uid }), `${get}`);
    // Spec 9.2: v2beta1 was renamed v2 with the shapes unchanged: where the old name answers, it answers the same.
    expect(
      JSON.stringify(expectOk(x, beta(get))) === JSON.stringify(v2),
      `${beta(get)} answering as ${get}`,
      x.body,
      x,
    );
    const query = { uidp: { childrenOf: fx.root } };
    const y = await fx.client.rpc(beta(list), query);
    const listed = expectOk(await fx.client.rpc(list, query), list);
    expect(
      JSON.stringify(expectOk(y, beta(list))) === JSON.stringify(listed),
      `${beta(list)} answering as ${list}`,
      y.body,
      y,
    );
  },
  'api/token-exchange-grpc': async (fx) => {
    if (!fx.client.rpc) throw new Skip('the token service is a gRPC service (run with --protocol grpc)');
    const x = await fx.client.rpc(
      '/chainguard.platform.oidc.SecurityTokenService/Exchange',
      { identity: missingUid(fx) },
      { authorization: `Bearer ${forgedToken}` },
    );
    expectError(x, 16, 'UNAUTHENTICATED');
  },
};
