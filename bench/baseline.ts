// The cost floor of this stack: a minimal hand-written Koa server answering the benchmark's repo requests from
// the same SQLite file with the same driver and hand-written SQL, producing the same JSON. No validation,
// no authorization, no ORM: what any generated server is measured against.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import Koa from 'koa';

const sqlite3 = createRequire(import.meta.url)('sqlite3');
const db = new sqlite3.Database(process.env.DATABASE_FILE);
db.configure('busyTimeout', 10000);
const all = (sql: string, params: unknown[]) =>
  new Promise<any[]>((res, rej) => db.all(sql, params, (e: Error | null, rows: any[]) => (e ? rej(e) : res(rows))));
const run = (sql: string, params: unknown[]) =>
  new Promise<void>((res, rej) => db.run(sql, params, (e: Error | null) => (e ? rej(e) : res())));

const columns =
  'uid, name, description, aliases, active_tags, bundles, catalog_tier, sync_config, create_time, update_time';
/** A repo's JSON: unset fields left out, the JSON columns parsed. */
const repo = (r: any) => {
  const out: Record<string, unknown> = { uid: r.uid, name: r.name };
  if (r.description !== null) out.description = r.description;
  if (r.aliases !== null) out.aliases = JSON.parse(r.aliases);
  if (r.active_tags !== null) out.activeTags = JSON.parse(r.active_tags);
  if (r.bundles !== null) out.bundles = JSON.parse(r.bundles);
  if (r.catalog_tier !== null) out.catalogTier = r.catalog_tier;
  if (r.sync_config !== null) out.sync_config = JSON.parse(r.sync_config);
  out.createTime = r.create_time;
  out.updateTime = r.update_time;
  return out;
};

const app = new Koa();
app.use(async (ctx) => {
  const path = ctx.path;
  const prefix = '/registry/v2/repos';
  const read = async () => {
    let text = '';
    for await (const c of ctx.req) text += c;
    return JSON.parse(text || '{}');
  };
  if (path === prefix && ctx.method === 'GET') {
    const scope = String(ctx.query['uidp.descendants_of']);
    const size = Math.min(Number(ctx.query.page_size ?? 50), 200);
    const skip = Number(ctx.query.skip ?? 0);
    const after = ctx.query.page_token ? Buffer.from(String(ctx.query.page_token), 'base64url').toString() : '';
    const range = [`${scope}/`, `${scope}0`];
    const rows = await all(
      `select ${columns} from repos where uid > ? and uid < ? and uid > ? order by uid limit ? offset ?`,
      [...range, after, size + 1, skip],
    );
    const [{ n }] = await all('select count(*) as n from repos where uid > ? and uid < ?', range);
    const page = rows.slice(0, size);
    ctx.body = {
      repos: page.map(repo),
      nextPageToken: rows.length > size ? Buffer.from(page[page.length - 1].uid).toString('base64url') : '',
      totalCount: String(n),
      skipped: skip,
    };
    return;
  }
  if (!path.startsWith(`${prefix}/`)) {
    ctx.status = 404;
    return;
  }
  const uid = decodeURIComponent(path.slice(prefix.length + 1));
  const now = new Date().toISOString();
  if (ctx.method === 'GET') {
    const [r] = await all(`select ${columns} from repos where uid = ?`, [uid]);
    ctx.status = r ? 200 : 404;
    ctx.body = r ? repo(r) : { code: 5, message: 'not found', details: [] };
  } else if (ctx.method === 'POST') {
    const body = await read();
    const child = `${uid}/${randomBytes(8).toString('hex')}`;
    await run(
      'insert into repos (uid, parent_uid, create_time, update_time, name, description) values (?, ?, ?, ?, ?, ?)',
      [child, uid, now, now, body.name, body.description ?? null],
    );
    ctx.body = repo({
      uid: child,
      name: body.name,
      description: body.description ?? null,
      aliases: null,
      active_tags: null,
      bundles: null,
      catalog_tier: null,
      sync_config: null,
      create_time: now,
      update_time: now,
    });
  } else if (ctx.method === 'PATCH') {
    const body = await read();
    await run('update repos set description = ?, update_time = ? where uid = ?', [body.description, now, uid]);
    const [r] = await all(`select ${columns} from repos where uid = ?`, [uid]);
    ctx.body = repo(r);
  }
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address() as { port: number };
  console.log(`baseline listening on http://127.0.0.1:${address.port}`);
});
process.on('SIGTERM', () => server.close(() => db.close(() => process.exit(0))));
