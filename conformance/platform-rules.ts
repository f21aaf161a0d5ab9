// This API's own rules: what the Platform's spec says of particular resources (the built-in viewer role, hydrated
// role bindings, tags, v1 beside v2) and of its gRPC surfaces (the v2beta1 names, the token service). A plan
// of another API names none of them.
import { expect, expectError, expectOk, Skip, statusOf } from './client.js';
import {
  type ApiCheck,
  expectNoDeprecation,
  type Fixture,
  forgedToken,
  missingUid,
  rfc3339ms,
  unset,
} from './fixture.js';

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

/** A v1 gRPC service of records: its rpcs, the create request's parent and record fields, a valid record. */
interface V1Service {
  what: string;
  service: string;
  rpcs: { create: string; list: string; delete: string; update?: string };
  parent: string;
  record: string;
  body: Record<string, string>;
}

const v1Services: V1Service[] = [
  {
    what: 'repo',
    service: 'chainguard.platform.registry.Registry',
    rpcs: { create: 'CreateRepo', list: 'ListRepos', delete: 'DeleteRepo', update: 'UpdateRepo' },
    parent: 'parentId',
    record: 'repo',
    body: { name: 'v1-grpc-repo', description: 'made over v1 gRPC' },
  },
  {
    what: 'group',
    service: 'chainguard.platform.iam.Groups',
    rpcs: { create: 'Create', list: 'List', delete: 'Delete', update: 'Update' },
    parent: 'parent',
    record: 'group',
    body: { name: 'v1-grpc-group', description: 'made over v1 gRPC' },
  },
  {
    what: 'subscription',
    service: 'chainguard.platform.events.Subscriptions',
    rpcs: { create: 'Create', list: 'List', delete: 'Delete' },
    parent: 'parentId',
    record: 'subscription',
    body: { sink: 'http://127.0.0.1:9/v1-grpc' },
  },
];

type Rpc = NonNullable<Fixture['client']['rpc']>;

function v1Rpc(fx: Fixture): Rpc {
  const rpc = fx.client.rpc;
  if (!rpc) throw new Skip('the v1 services are gRPC services here (run with --protocol grpc)');
  return rpc.bind(fx.client);
}

const v1Path = (s: V1Service, rpc: string) => `/${s.service}/${rpc}`;

/** A record made through v1's Create under the suite's group, remembered for clean-up by its v2 path. */
let v1Made = 0;
async function v1Create(fx: Fixture, s: V1Service): Promise<any> {
  // Names made distinct: a repo's name is taken once in its group.
  const n = String(++v1Made).padStart(3, '0');
  const body = Object.fromEntries(Object.entries(s.body).map(([k, v]) => [k, k === 'name' ? `${v}-${n}` : v]));
  const x = await v1Rpc(fx)(v1Path(s, s.rpcs.create), { [s.parent]: fx.root, [s.record]: body });
  if (x.status === statusOf[12]) throw new Skip(`the target does not serve ${v1Path(s, s.rpcs.create)}`);
  const made = expectOk(x, `v1 ${s.rpcs.create}`);
  const v2 = fx.plan.resources.find((r) => r.collection === `${s.what}s`);
  if (v2 && typeof made.id === 'string') fx.created.push({ base: v2.base, uid: made.id });
  return { made, x, body };
}

async function v1ListById(fx: Fixture, s: V1Service, id: string) {
  const x = await v1Rpc(fx)(v1Path(s, s.rpcs.list), { id });
  return { items: expectOk(x, `v1 ${s.rpcs.list} by id`).items ?? [], x };
}

/** Rules of v1 over gRPC (the reference's chainguard.platform.{registry,iam,events,ping} services). */
export const v1GrpcChecks: Record<string, ApiCheck> = {
  'api/v1-grpc-create-then-list': async (fx) => {
    // As v2's create and get: the record under its parent, its fields as sent, listed by its id as created.
    for (const s of v1Services) {
      const { made, x, body } = await v1Create(fx, s);
      expect(
        typeof made.id === 'string' && made.id.startsWith(`${fx.root}/`),
        `a v1 ${s.what} id under the parent ${fx.root}`,
        made.id,
        x,
      );
      for (const [k, v] of Object.entries(body)) expect(made[k] === v, `${k} echoed as sent`, made[k], x);
      const { items, x: y } = await v1ListById(fx, s, made.id);
      expect(
        items.length === 1 && JSON.stringify(items[0]) === JSON.stringify(made),
        `v1 ${s.rpcs.list} by id answering the created ${s.what}`,
        items,
        y,
      );
    }
    const ping = await v1Rpc(fx)('/chainguard.platform.ping.PingService/Ping', {});
    expectOk(ping, 'v1 Ping');
  },
  'api/v1-grpc-update-replaces': async (fx) => {
    // v1's Update is a full replacement: a field the message leaves out is reset, where v2's PATCH keeps it.
    for (const s of v1Services.filter((x) => x.rpcs.update)) {
      const { made } = await v1Create(fx, s);
      const x = await v1Rpc(fx)(v1Path(s, s.rpcs.update!), { id: made.id, name: `${made.name}-renamed` });
      const b = expectOk(x, `v1 ${s.rpcs.update}`);
      expect(b.name === `${made.name}-renamed`, `name ${made.name}-renamed`, b.name, x);
      expect(unset(b.description), 'description, left out of the message, reset', b.description, x);
      const { items, x: y } = await v1ListById(fx, s, made.id);
      expect(JSON.stringify(items[0]) === JSON.stringify(b), 'v1 List by id answering the update', items, y);
    }
  },
  'api/v1-grpc-list-gone-empty': async (fx) => {
    // v1 has no Get: the List by the id of a deleted record answers an empty list, not NOT_FOUND.
    for (const s of v1Services) {
      const { made } = await v1Create(fx, s);
      expectOk(await v1Rpc(fx)(v1Path(s, s.rpcs.delete), { id: made.id }), `v1 ${s.rpcs.delete}`);
      const { items, x } = await v1ListById(fx, s, made.id);
      expect(items.length === 0, `v1 ${s.rpcs.list} by the id of the deleted ${s.what}: an empty list`, items, x);
    }
  },
  'api/v1-grpc-errors': async (fx) => {
    // The errors of v2 over gRPC: a missing name, no token, a caller without the capability.
    const [repos] = v1Services;
    const rpc = v1Rpc(fx);
    const create = v1Path(repos, repos.rpcs.create);
    const x = await rpc(create, { [repos.parent]: fx.root, [repos.record]: { description: 'no name' } });
    const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
    const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
    expect(
      br.fieldViolations.some((v: any) => /(^|\.)name$/.test(v.field)),
      'a field violation for name',
      br.fieldViolations,
      x,
    );
    const list = v1Path(repos, repos.rpcs.list);
    expectError(await rpc(list, { id: missingUid(fx) }, { authorization: '' }), 16, 'UNAUTHENTICATED');
    if (!fx.client.lowPrivilegeToken) throw new Skip('run with --low-privilege-token to check 403s');
    const low = { authorization: `Bearer ${fx.client.lowPrivilegeToken}` };
    const refused = await rpc(create, { [repos.parent]: fx.root, [repos.record]: repos.body }, low);
    expectError(refused, 7, 'PERMISSION_DENIED');
  },
};
