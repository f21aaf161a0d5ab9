// The strong baseline: what a strong Node engineer would hand-write for the benchmark's repo requests. Fastify
// with schema-compiled JSON output, better-sqlite3 (the driver our server uses) with every statement prepared
// once and read synchronously, the same SQLite file, and the same token check as ours: an ES256 JWT of our
// issuer verified with jose against the data directory's public keys, cached by token string until its exp.
// Each create and patch records its event in the same transaction, in the outbox our server's delivery worker
// reads (the spec's subscriptions receive every change, so a server of this API cannot skip it); recorded as
// dispatched, as a dispatcher finding no subscription leaves it, so that our server's worker, running beside,
// takes no CPU for the baseline's events. No validation and no grants: the fastest honest server for these
// five requests.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createLocalJWKSet, type JWK } from 'jose';
import { parseCommandLine } from '../scripts/cli-args.js';
import { listSchema, notFound, prefix, repoApp, repoSchema, type ListQuery, type Named } from './repo-app.js';

parseCommandLine({
  name: 'strong-baseline',
  usage: `
usage: tsx bench/strong-baseline.ts (started by npm run bench)
The benchmark's strong baseline: a Fastify server answering the repo requests from the SQLite file of
DATABASE_FILE, verifying tokens with the public keys in DATA_DIR/signing-keys.json for ISSUER_URL (issuer and
audience), listening on 127.0.0.1:PORT (0: any free port).`,
});

const db = new Database(process.env.DATABASE_FILE!);
// The pragmas our server sets on the same file: WAL, a wait for the write lock, and fsync at checkpoints only.
db.pragma('journal_mode = WAL');
db.pragma('busy_timeout = 10000');
db.pragma('synchronous = NORMAL');

interface RepoRow {
  uid: string;
  name: string;
  description: string | null;
  /** JSON text of string arrays */
  aliases: string | null;
  active_tags: string | null;
  bundles: string | null;
  catalog_tier: string | null;
  /** JSON text of an object */
  sync_config: string | null;
  create_time: string;
  update_time: string;
}

// Every column a repo's answer shows: a server that left some out would answer wrong for repos that have them.
const columns =
  'uid, name, description, aliases, active_tags, bundles, catalog_tier, sync_config, create_time, update_time';
const byUid = db.prepare<[string], RepoRow>(`select ${columns} from repos where uid = ?`);
// One range on the uid index, its lower end the later of the scope's start and the cursor: SQLite seeks there.
// One statement per page size, the limit in its text: SQLite prepares a statement with a bound LIMIT again at
// every run (its plan may depend on the value), which costs a tenth of a page (our server does the same).
const pages = new Map<number, Database.Statement<[string, string, number], RepoRow>>();
function pageOf(size: number): Database.Statement<[string, string, number], RepoRow> {
  let statement = pages.get(size);
  if (!statement) {
    statement = db.prepare(
      `select ${columns} from repos where uid > ? and uid < ? order by uid limit ${size} offset ?`,
    );
    pages.set(size, statement);
  }
  return statement;
}
// totalCount from our per-scope counts (runtime/storage/scope-counts.ts), kept in each create's transaction below: a
// single primary-key read at any size, where an index-backed count(*) would walk the whole scope per list.
const scopeCount = db.prepare<[string], { below: number }>(
  "select below from scope_counts where collection = 'repos' and scope = ?",
);
const insertRepo = db.prepare(
  'insert into repos (uid, parent_uid, create_time, update_time, name, description) values (?, ?, ?, ?, ?, ?)',
);
const noteScope = db.prepare(
  "insert into scope_counts (collection, scope, below, children) values ('repos', ?, ?, ?) " +
    'on conflict (collection, scope) do update set below = below + excluded.below, children = children + excluded.children',
);

const insertEvent = db.prepare(
  'insert into event_outbox (type, subject, group_uid, actor, body, time, dispatched_time) values (?, ?, ?, ?, ?, ?, ?)',
);
const eventPrefix = 'dev.chainguard.api.platform.registry.repo';
/** A repo's group: its uid without the repo's own segment. */
const groupOf = (uid: string) => uid.slice(0, uid.lastIndexOf('/'));
/** The event of a change, as our server records it: its type, the resource, its group and the new state. */
function recordEvent(type: string, row: RepoRow, group: string, actor: string): void {
  insertEvent.run(type, row.uid, group, actor, JSON.stringify(repo(row)), row.update_time, row.update_time);
}

/** A patch: the update and its event in one transaction; undefined when there is no such repo. */
const patch = db.transaction((fields: string[], values: unknown[], uid: string, actor: string) => {
  const row = updateOf(fields).get(...values, new Date().toISOString(), uid);
  if (row) recordEvent(`${eventPrefix}.updated.v1`, row, groupOf(uid), actor);
  return row;
});

/**
 * Stores a repo, counts it in every scope above it (as runtime/storage/scope-counts.ts does) and records its event, in
 * one transaction.
 */
const create = db.transaction((row: RepoRow, parent: string, actor: string) => {
  insertRepo.run(row.uid, parent, row.create_time, row.update_time, row.name, row.description);
  recordEvent(`${eventPrefix}.created.v1`, row, groupOf(row.uid), actor);
  noteScope.run('', 1, 0);
  noteScope.run(parent, 1, 1);
  for (let i = parent.lastIndexOf('/'); i > 0; i = parent.lastIndexOf('/', i - 1))
    noteScope.run(parent.slice(0, i), 1, 0);
});

/** The update of the fields a PATCH body carries, prepared once per set of fields. */
const patchable = ['name', 'description'] as const;
const updates = new Map<string, Database.Statement<unknown[], RepoRow>>();
function updateOf(fields: string[]): Database.Statement<unknown[], RepoRow> {
  const key = fields.join();
  let statement = updates.get(key);
  if (!statement) {
    const set = [...fields, 'update_time'].map((f) => `${f} = ?`).join(', ');
    statement = db.prepare<unknown[], RepoRow>(`update repos set ${set} where uid = ? returning ${columns}`);
    updates.set(key, statement);
  }
  return statement;
}

/** A repo's JSON (the output schema leaves out what is undefined), the JSON columns parsed. */
function repo(r: RepoRow) {
  return {
    uid: r.uid,
    name: r.name,
    description: r.description ?? undefined,
    aliases: r.aliases === null ? undefined : (JSON.parse(r.aliases) as string[]),
    activeTags: r.active_tags === null ? undefined : (JSON.parse(r.active_tags) as string[]),
    bundles: r.bundles === null ? undefined : (JSON.parse(r.bundles) as string[]),
    catalogTier: r.catalog_tier ?? undefined,
    sync_config: r.sync_config === null ? undefined : (JSON.parse(r.sync_config) as Record<string, unknown>),
    createTime: r.create_time,
    updateTime: r.update_time,
  };
}

// --- tokens: our issuer's public keys
const dataDir = process.env.DATA_DIR!;
const issuer = process.env.ISSUER_URL!;
const stored = JSON.parse(readFileSync(join(dataDir, 'signing-keys.json'), 'utf8')) as { publicJwk: JWK }[];
const keys = createLocalJWKSet({ keys: stored.map((k) => k.publicJwk) });
const app = repoApp(keys, issuer);

app.get<{ Querystring: ListQuery }>(prefix, { schema: { response: { 200: listSchema } } }, (req) => {
  const scope = String(req.query['uidp.descendants_of']);
  const size = Math.min(Math.trunc(Number(req.query.page_size ?? 50)) || 50, 200);
  const skip = Number(req.query.skip ?? 0);
  const after = req.query.page_token ? Buffer.from(req.query.page_token, 'base64url').toString() : '';
  const start = `${scope}/`;
  const rows = pageOf(size + 1).all(after > start ? after : start, `${scope}0`, skip);
  const shown = rows.slice(0, size);
  return {
    repos: shown.map(repo),
    nextPageToken: rows.length > size ? Buffer.from(shown[shown.length - 1].uid).toString('base64url') : '',
    totalCount: String(scopeCount.get(scope)?.below ?? 0),
    skipped: skip,
  };
});

app.get<Named>(`${prefix}/*`, { schema: { response: { 200: repoSchema } } }, (req, reply) => {
  const row = byUid.get(req.params['*']);
  if (row) return repo(row);
  reply.code(404);
  return notFound;
});

app.post<Named & { Body: { name: string; description?: string } }>(
  `${prefix}/*`,
  { schema: { response: { 200: repoSchema } } },
  (req) => {
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
    create(row, parent, req.caller);
    return repo(row);
  },
);

app.patch<Named & { Body: Record<string, unknown> }>(
  `${prefix}/*`,
  { schema: { response: { 200: repoSchema } } },
  (req, reply) => {
    const fields = patchable.filter((f) => f in req.body);
    const row = patch(
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
  console.log(`strong baseline listening on ${url}`);
});
process.on('SIGTERM', () =>
  app.close().then(() => {
    db.close();
    process.exit(0);
  }),
);
