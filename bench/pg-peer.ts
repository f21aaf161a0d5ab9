// The PostgreSQL peer: what a strong Node engineer would hand-write for the benchmark's repo requests on
// PostgreSQL, on our tables. Fastify with schema-compiled JSON output and pg with named prepared statements
// (parsed and planned once per connection). A create locks only the rows it depends on: the parent group
// FOR KEY SHARE (a concurrent delete of it waits), its own insert, and one of 16 count shards per scope above it
// (the layout of runtime/storage/scope-counts.ts: `<scope>` and `<scope>#1` .. `<scope>#15`), upserted in key
// order so that two creates never wait on each other in a cycle. Each create and patch records its event in
// the outbox in the same transaction, marked dispatched (as the strong SQLite baseline does, so that our
// server's delivery worker takes no CPU for the peer's events). Tokens: our issuer's ES256 JWTs, verified with
// jose against our server's published keys, cached until exp. No validation, no grants.
import { randomBytes, randomInt } from 'node:crypto';
import { createRemoteJWKSet } from 'jose';
import pg from 'pg';
import { parseCommandLine } from '../scripts/cli-args.js';
import { listSchema, notFound, prefix, repoApp, repoSchema, type ListQuery, type Named } from './repo-app.js';

parseCommandLine({
  name: 'pg-peer',
  usage: `
usage: node bench/.build/pg-peer.mjs (started by npm run bench -- --engines)
The benchmark's PostgreSQL peer: a Fastify server answering the repo requests from the PostgreSQL database of
DATABASE_URL (our server's tables), verifying tokens against JWKS_URL for ISSUER_URL (issuer and audience),
listening on 127.0.0.1:PORT (0: any free port).`,
});

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL!, max: 10 });
const shards = 16;

interface RepoRow {
  uid: string;
  name: string;
  description: string | null;
  /** jsonb: pg parses them */
  aliases: string[] | null;
  active_tags: string[] | null;
  bundles: string[] | null;
  catalog_tier: string | null;
  sync_config: Record<string, unknown> | null;
  create_time: string;
  update_time: string;
}

const columns =
  'uid, name, description, aliases, active_tags, bundles, catalog_tier, sync_config, create_time, update_time';
// Named statements: pg prepares each once per pooled connection and then only binds and executes it.
const byUid = { name: 'repo-by-uid', text: `select ${columns} from repos where uid = $1` };
const page = {
  name: 'repo-page',
  text: `select ${columns} from repos where uid > $1 and uid < $2 order by uid limit $3 offset $4`,
};
const scopeCount = {
  name: 'repo-scope-count',
  text: "select coalesce(sum(below), 0)::int8 as below from scope_counts where collection = 'repos' and scope = any($1)",
};
const lockParent = { name: 'lock-parent', text: 'select 1 from groups where uid = $1 for key share' };
const insertRepo = {
  name: 'insert-repo',
  text: 'insert into repos (uid, parent_uid, create_time, update_time, name, description) values ($1, $2, $3, $4, $5, $6)',
};
const insertEvent = {
  name: 'insert-event',
  text: 'insert into event_outbox (type, subject, group_uid, actor, body, time, dispatched_time) values ($1, $2, $3, $4, $5, $6, $7)',
};
const noteScope = (rows: number) => ({
  name: `note-scope-${rows}`,
  text:
    'insert into scope_counts (collection, scope, below, children) values ' +
    Array.from({ length: rows }, (_, i) => `('repos', $${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3})`).join(', ') +
    ' on conflict (collection, scope) do update set below = scope_counts.below + excluded.below,' +
    ' children = scope_counts.children + excluded.children',
});

const eventPrefix = 'dev.chainguard.api.platform.registry.repo';
const groupOf = (uid: string) => uid.slice(0, uid.lastIndexOf('/'));
/** The scopes above a parent, itself included, and '' for the whole table. */
function scopesOf(parent: string): string[] {
  const scopes = ['', parent];
  for (let i = parent.lastIndexOf('/'); i > 0; i = parent.lastIndexOf('/', i - 1)) scopes.push(parent.slice(0, i));
  return scopes;
}
const shardKey = (scope: string, shard: number) => (shard === 0 ? scope : `${scope}#${shard}`);

/** A repo's JSON (the output schema leaves out what is undefined). */
function repo(r: RepoRow) {
  return {
    uid: r.uid,
    name: r.name,
    description: r.description ?? undefined,
    aliases: r.aliases ?? undefined,
    activeTags: r.active_tags ?? undefined,
    bundles: r.bundles ?? undefined,
    catalogTier: r.catalog_tier ?? undefined,
    sync_config: r.sync_config ?? undefined,
    createTime: r.create_time,
    updateTime: r.update_time,
  };
}

/** One transaction on one pooled connection; rolled back if it throws. */
async function transaction<T>(work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('begin');
    const result = await work(c);
    await c.query('commit');
    return result;
  } catch (e) {
    await c.query('rollback');
    throw e;
  } finally {
    c.release();
  }
}

async function create(row: RepoRow, parent: string, actor: string): Promise<boolean> {
  return transaction(async (c) => {
    if ((await c.query(lockParent, [parent])).rowCount === 0) return false;
    await c.query(insertRepo, [row.uid, parent, row.create_time, row.update_time, row.name, row.description]);
    const body = JSON.stringify(repo(row));
    await c.query(insertEvent, [
      `${eventPrefix}.created.v1`,
      row.uid,
      groupOf(row.uid),
      actor,
      body,
      row.update_time,
      row.update_time,
    ]);
    const shard = randomInt(shards);
    const changes = scopesOf(parent)
      .map((scope) => [shardKey(scope, shard), 1, scope === parent ? 1 : 0] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await c.query(noteScope(changes.length), changes.flat());
    return true;
  });
}

const patchable = ['name', 'description'] as const;
async function patch(fields: string[], values: unknown[], uid: string, actor: string): Promise<RepoRow | undefined> {
  return transaction(async (c) => {
    const set = [...fields, 'update_time'].map((f, i) => `${f} = $${i + 1}`).join(', ');
    const now = new Date().toISOString();
    const { rows } = await c.query<RepoRow>({
      name: `patch-${fields.join()}`,
      text: `update repos set ${set} where uid = $${fields.length + 2} returning ${columns}`,
      values: [...values, now, uid],
    });
    const row = rows[0];
    if (row)
      await c.query(insertEvent, [
        `${eventPrefix}.updated.v1`,
        uid,
        groupOf(uid),
        actor,
        JSON.stringify(repo(row)),
        now,
        now,
      ]);
    return row;
  });
}

// --- tokens: our issuer's public keys
const issuer = process.env.ISSUER_URL!;
const keys = createRemoteJWKSet(new URL(process.env.JWKS_URL!));
const app = repoApp(keys, issuer);

app.get<{ Querystring: ListQuery }>(prefix, { schema: { response: { 200: listSchema } } }, async (req) => {
  const scope = String(req.query['uidp.descendants_of']);
  const size = Math.min(Math.trunc(Number(req.query.page_size ?? 50)) || 50, 200);
  const skip = Number(req.query.skip ?? 0);
  const after = req.query.page_token ? Buffer.from(req.query.page_token, 'base64url').toString() : '';
  const start = `${scope}/`;
  const keysOfScope = Array.from({ length: shards }, (_, n) => shardKey(scope, n));
  const [{ rows }, counted] = await Promise.all([
    pool.query<RepoRow>(page, [after > start ? after : start, `${scope}0`, size + 1, skip]),
    pool.query<{ below: string }>(scopeCount, [keysOfScope]),
  ]);
  const shown = rows.slice(0, size);
  return {
    repos: shown.map(repo),
    nextPageToken: rows.length > size ? Buffer.from(shown[shown.length - 1].uid).toString('base64url') : '',
    totalCount: counted.rows[0].below,
    skipped: skip,
  };
});

app.get<Named>(`${prefix}/*`, { schema: { response: { 200: repoSchema } } }, async (req, reply) => {
  const { rows } = await pool.query<RepoRow>(byUid, [req.params['*']]);
  if (rows[0]) return repo(rows[0]);
  reply.code(404);
  return notFound;
});

app.post<Named & { Body: { name: string; description?: string } }>(
  `${prefix}/*`,
  { schema: { response: { 200: repoSchema } } },
  async (req, reply) => {
    const parent = req.params['*'];
    const now = new Date().toISOString();
    const row: RepoRow = {
      uid: `${parent}/${randomBytes(8).toString('hex')}`,
      name: req.body.name,
      description: req.body.description ?? null,
      aliases: null,
      active_tags: null,
      bundles: null,
      catalog_tier: null,
      sync_config: null,
      create_time: now,
      update_time: now,
    };
    if (await create(row, parent, req.caller)) return repo(row);
    reply.code(404);
    return notFound;
  },
);

app.patch<Named & { Body: Record<string, unknown> }>(
  `${prefix}/*`,
  { schema: { response: { 200: repoSchema } } },
  async (req, reply) => {
    const fields = patchable.filter((f) => f in req.body);
    const row = await patch(
      fields,
      fields.map((f) => req.body[f]),
      req.params['*'],
      req.caller,
    );
    if (row) return repo(row);
    reply.code(404);
    return notFound;
  },
);

app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' }).then((url) => {
  console.log(`pg peer listening on ${url}`);
});
process.on('SIGTERM', () =>
  app.close().then(async () => {
    await pool.end();
    process.exit(0);
  }),
);
