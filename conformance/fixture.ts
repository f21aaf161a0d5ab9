// The harness the rules run in: a Fixture makes what a rule needs under the suite's group through the public API
// (distinct records, parents, the shared sets the paging rules walk) and remembers it for clean-up; beside it the
// small checks every kind of rule reads answers with.
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { type ConformancePlan, type ResourcePlan, variedValue } from './plan.js';
import { type ApiClient, expect, expectError, expectOk, Skip, statusOf, type Exchange } from './client.js';

export class Fixture {
  private counter = 0;
  private readonly memo = new Map<string, Promise<unknown>>();
  /** uids the suite created, with their base path, for clean-up in reverse order */
  readonly created: { base: string; uid: string }[] = [];
  /** records nothing else refers to or lives under (the page size rules' many), deleted first, several at once */
  readonly leaves: { base: string; uid: string }[] = [];

  /** what the running rule says of how it ran (a weaker check it fell back to), shown with its result */
  notes: string[] = [];

  constructor(
    readonly client: ApiClient,
    readonly plan: ConformancePlan,
    readonly root: string,
  ) {}

  resource(collection: string): ResourcePlan {
    const p = this.plan.resources.find((r) => r.collection === collection);
    if (!p) throw new Skip(`the plan has no resource ${collection}`);
    return p;
  }

  once<T>(key: string, make: () => Promise<T>): Promise<T> {
    if (!this.memo.has(key)) this.memo.set(key, make());
    return this.memo.get(key) as Promise<T>;
  }

  /**
   * A create body: string values made distinct, so records differ and sort by their fields, and references
   * pointing at records the suite made for them.
   */
  async variant(p: ResourcePlan): Promise<Record<string, unknown>> {
    const n = ++this.counter;
    const body: Record<string, unknown> = structuredClone(p.createBody);
    for (const [field, collection] of Object.entries(p.references)) body[field] = await this.referenced(collection);
    // Fields the suite orders or filters by get a value of each record's own; strings get their suffix below.
    for (const [field, f] of Object.entries(p.varied))
      body[field] = f.type === 'string' ? (body[field] ?? f.base) : variedValue(f, n);
    for (const [k, v] of Object.entries(body)) {
      if (typeof v !== 'string' || !p.strings.includes(k) || p.references[k]) continue;
      const pattern = p.patterns[k] ? new RegExp(p.patterns[k], 'u') : undefined;
      const candidate = `${v}-${String(n).padStart(3, '0')}`;
      if (!pattern || pattern.test(candidate)) body[k] = candidate;
    }
    return body;
  }

  /** The create path under parent; one-per-parent resources get a new subgroup of it each time. */
  async createPath(p: ResourcePlan, parent: string | undefined): Promise<string> {
    if (parent === undefined) return p.base;
    if (p.uidIsParent) return `${p.base}/${(await this.create(this.resource('groups'), parent)).uid}`;
    return `${p.base}/${parent}`;
  }

  /** A record of the collection for references to point at, made once per run. */
  referenced(collection: string): Promise<string> {
    return this.once(`ref:${collection}`, async () => {
      const p = this.resource(collection);
      return (await this.create(p, await this.sharedParent(p))).uid as string;
    });
  }

  async create(p: ResourcePlan, parent: string | undefined, given?: Record<string, unknown>): Promise<any> {
    const body = given ?? (await this.variant(p));
    const x = await this.client.call('POST', await this.createPath(p, parent), body);
    const created = expectOk(x, `create ${p.type}`);
    expect(typeof created.uid === 'string' && created.uid.length > 0, 'the created resource to have a uid', created, x);
    this.created.push({ base: p.base, uid: created.uid });
    return created;
  }

  /** A new parent for records of p: a subgroup of the suite's group, or a new record of the parent resource. */
  async freshParent(p: ResourcePlan): Promise<string | undefined> {
    if (!p.parent) return undefined;
    if (p.parent === 'groups') return (await this.create(this.resource('groups'), this.root)).uid;
    const parentPlan = this.resource(p.parent);
    if (!parentPlan.operations.includes('create'))
      throw new Skip(`cannot create a ${parentPlan.type} to hold ${p.collection}`);
    return (await this.create(parentPlan, await this.sharedParent(parentPlan))).uid;
  }

  sharedParent(p: ResourcePlan): Promise<string | undefined> {
    if (p.parent === 'groups') return Promise.resolve(this.root);
    return this.once(`parent:${p.collection}`, () => this.freshParent(p));
  }

  /** The list URL of the records under a parent. */
  listUrl(p: ResourcePlan, parent: string | undefined, query: Record<string, string | string[]> = {}): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) for (const one of [v].flat()) q.append(k, one);
    let base = p.base;
    if (p.listPath && parent !== undefined) base = p.listPath.replace('{parent}', parent);
    else if (parent !== undefined) q.set(p.uidIsParent ? 'uidp.descendants_of' : 'uidp.children_of', parent);
    const s = q.toString();
    return s ? `${base}?${s}` : base;
  }

  /**
   * At least n records under a parent of their own, shared by the page size rules and grown as they ask: more
   * than the default page size (51), more than the maximum (201). A target that refuses more (a quota) skips.
   */
  async recordsUnder(p: ResourcePlan, n: number): Promise<{ parent: string | undefined; records: number }> {
    const set = await this.once(`big:${p.collection}`, async () => ({ parent: await this.freshParent(p), records: 0 }));
    const grow = async () => {
      const had = set.records;
      const grown: string[] = [];
      // Eight at a time: the target takes them as any client's concurrent writes.
      while (set.records < n) {
        const batch = Math.min(8, n - set.records);
        const made = await Promise.all(Array.from({ length: batch }, () => this.tryCreate(p, set.parent)));
        for (const x of made) if ('uid' in x) grown.push(x.uid);
        set.records = had + grown.length;
        const refused = made.find((x) => 'refused' in x);
        if (refused) {
          // What this growth took is given back, so that the quota it filled does not fail the rules after it.
          await this.giveBack(p, grown);
          set.records = had;
          const took = had + grown.length;
          throw new Skip(`the target took ${took} ${p.collection} in one scope and refused more (${refused.refused})`);
        }
      }
    };
    this.growing = this.growing.then(grow, grow);
    await this.growing;
    return set;
  }

  private growing: Promise<void> = Promise.resolve();

  /** A create that the target may refuse with a quota (RESOURCE_EXHAUSTED): the record's uid, or what it answered. */
  private async tryCreate(p: ResourcePlan, parent: string | undefined): Promise<{ uid: string } | { refused: string }> {
    const x = await this.client.call('POST', await this.createPath(p, parent), await this.variant(p));
    if (x.status === statusOf[8]) return { refused: `HTTP ${x.status} ${x.body?.message ?? ''}` };
    const created = expectOk(x, `create ${p.type}`);
    this.leaves.push({ base: p.base, uid: created.uid });
    return { uid: created.uid };
  }

  /** Deletes these leaves now, eight at a time, and forgets them. */
  private async giveBack(p: ResourcePlan, uids: string[]): Promise<void> {
    for (let i = 0; i < uids.length; i += 8)
      await Promise.all(uids.slice(i, i + 8).map((uid) => this.client.call('DELETE', `${p.base}/${uid}`)));
    const gone = new Set(uids);
    const kept = this.leaves.filter((l) => !gone.has(l.uid));
    this.leaves.splice(0, this.leaves.length, ...kept);
  }

  /**
   * A token of an identity the suite makes in its group, bound there to a role of its own that holds every
   * capability the suite may grant but `without`: a caller that a server checking only "holds some role" lets
   * through. The suite is the identity's issuer (static keys of its own) and exchanges a token it signs at the
   * target's token exchange; where the target has none, or refuses, the reason instead. Made once per set.
   */
  callerWithout(without: string[]): Promise<{ token: string } | { reason: string }> {
    return this.once(`caller:${[...without].sort().join(',')}`, async () => {
      const exchange = this.plan.tokenExchange;
      if (!exchange)
        return { reason: 'the API serves no token exchange to get a token of an identity the suite makes' };
      const has = (c: string) => this.plan.resources.some((r) => r.collection === c && r.operations.includes('create'));
      if (!['identities', 'roles', 'roleBindings'].every(has))
        return { reason: 'the API has no identities, roles and role bindings to create' };
      const issuer = await this.once('issuer', ownIssuer);
      const n = ++this.counter;
      const subject = `caller-${n}`;
      const identity = await this.create(this.resource('identities'), this.root, {
        name: `conformance caller ${n}`,
        staticKeys: { issuer: issuer.url, subject, issuerKeys: issuer.keys, audiences: [issuer.audience] },
      });
      const role = await this.create(this.resource('roles'), this.root, {
        name: `conformance without ${without.join(' ')}`.toLowerCase(),
        capabilities: this.plan.grantable.filter((c) => !without.includes(c)),
      });
      await this.create(this.resource('roleBindings'), this.root, { identityUid: identity.uid, roleUid: role.uid });
      const upstream = `Bearer ${await issuer.sign(subject)}`;
      const x =
        exchange.rpc && this.client.rpc
          ? await this.client.rpc(exchange.rpc, { identity: identity.uid }, { authorization: upstream })
          : await this.client.call('POST', `${exchange.path}?identity=${encodeURIComponent(identity.uid)}`, undefined, {
              authorization: upstream,
            });
      if (x.status === 200 && typeof x.body?.token === 'string') return { token: x.body.token as string };
      return {
        reason: `the token exchange refused an identity of static keys (HTTP ${x.status} ${x.body?.message ?? ''})`,
      };
    });
  }

  /** Eight records under a parent of their own, for the paging and ordering rules. */
  walkSet(p: ResourcePlan): Promise<{ parent: string | undefined; records: any[] }> {
    return this.once(`walk:${p.collection}`, async () => {
      const parent = await this.freshParent(p);
      const records = [];
      for (let i = 0; i < 8; i++) records.push(await this.create(p, parent));
      return { parent, records };
    });
  }
}

/** The suite as an OIDC issuer of its own: a key pair made for this run, its public key as a JWKS document. */
async function ownIssuer(): Promise<{
  url: string;
  audience: string;
  keys: string;
  sign(subject: string): Promise<string>;
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = randomBytes(8).toString('hex');
  const url = `https://conformance.invalid/${kid}`;
  const audience = 'conformance';
  const keys = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] });
  const sign = (subject: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(url)
      .setSubject(subject)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(privateKey);
  return { url, audience, keys, sign };
}

export const rfc3339ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Not shown: over gRPC, proto3 cannot tell a field left out from one at its default. */
export const unset = (v: unknown) => v === undefined || v === '' || v === false || v === 0;
export const missingUid = (fx: Fixture) => `${fx.root}/0123456789abcdef`;

/** A rule of one resource; a trailing * in its name takes the rest of the name as its argument. */
export type RuleFn = (fx: Fixture, p: ResourcePlan, arg: string) => Promise<void>;
/** A rule of the API as a whole. */
export type ApiCheck = (fx: Fixture) => Promise<void>;

export const withoutToken = { authorization: '' };
/** A token of the right shape with a signature no key made. */
export const forgedToken = `${Buffer.from('{"alg":"ES256","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2lnbmF0dXJl`;

/** The headers of an HTTP answer; over gRPC there are none to read. */
export function headersOf(x: Exchange): Record<string, string> {
  if (!x.headers) throw new Skip('headers are read over HTTP only');
  return x.headers;
}

export const isJson = (x: Exchange) => /^application\/json\b/i.test(headersOf(x)['content-type'] ?? '');

/**
 * INVALID_ARGUMENT with a BadRequest whose violations name the field (as itself, or inside the message that holds
 * it: repo.name); the error body, for the rule to read further.
 */
export function expectFieldViolation(x: Exchange, field: string): any {
  const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
  const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
  expect(
    (br.fieldViolations ?? []).some((v: any) => v.field === field || v.field?.endsWith(`.${field}`)),
    `a field violation for ${field}`,
    br.fieldViolations,
    x,
  );
  return b;
}

/** Spec 9.3: v2 is generally available; no response of it carries deprecation or sunset headers. */
export function expectNoDeprecation(x: Exchange): void {
  const h = headersOf(x);
  expect(h.deprecation === undefined && h.sunset === undefined, 'no Deprecation or Sunset header', h, x);
}
