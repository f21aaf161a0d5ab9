// npm run events -- tail | deliveries: watch the events a server commits, and how their deliveries stand. Reads
// the database read-only (a running server is not disturbed) through the same driver the server uses.
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ConfigError, readConfig } from '../runtime/operate/config.js';
import { parseCommandLine } from './cli-args.js';

const { values, positionals } = parseCommandLine({
  name: 'events',
  allowPositionals: true,
  usage: `
usage: npm run events -- tail [--from N] | deliveries
  tail        prints each event as it is committed (seq, time, type, subject, group), until interrupted;
              --from N starts after outbox sequence N (default: the last 10 events)
  deliveries  prints, per subscription, how many deliveries are pending, delivered and failed, the oldest
              pending one's age (the delivery lag) and the last error
Reads the server's database (DATA_DIR/platform.sqlite, or DATABASE_URL: SQLite or PostgreSQL) without writing;
the server may be running.`,
  options: { from: { type: 'string' } },
});

interface EventRow {
  seq: number;
  time: string;
  type: string;
  subject: string;
  group_uid: string | null;
}

/** Reads of the server's database, whichever engine: statements written with ? for each parameter. */
interface Reader {
  where: string;
  all<R>(sql: string, params?: unknown[]): Promise<R[]>;
}

function open(): Reader {
  const { database } = readConfig();
  if (database.engine === 'postgresql') {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    const u = new URL(database.url);
    return {
      where: `${u.hostname}:${u.port || 5432}${u.pathname}`,
      all: async (sql, params = []) => {
        let n = 0;
        return (
          await pool.query(
            sql.replace(/\?/g, () => `$${++n}`),
            params,
          )
        ).rows;
      },
    };
  }
  if (!existsSync(database.file)) throw new ConfigError(`no database at ${database.file}: start the server once first`);
  const db = new Database(database.file, { readonly: true, timeout: 5000 });
  return { where: database.file, all: async (sql, params = []) => db.prepare(sql).all(...params) as never[] };
}

async function tail(db: Reader): Promise<void> {
  const next = 'select seq, time, type, subject, group_uid from event_outbox where seq > ? order by seq limit 500';
  const [{ last }] = await db.all<{ last: number }>('select coalesce(max(seq), 0) as last from event_outbox');
  if (values.from !== undefined && !/^\d+$/.test(values.from)) throw new ConfigError('--from takes a sequence number');
  let after = values.from !== undefined ? Number(values.from) : Math.max(0, Number(last) - 10);
  console.error(`events: following ${db.where} from sequence ${after} (Ctrl-C stops)`);
  for (;;) {
    for (const e of await db.all<EventRow>(next, [after])) {
      console.log(`${e.seq}\t${e.time}\t${e.type}\t${e.subject}\t${e.group_uid ?? '-'}`);
      after = e.seq;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function deliveries(db: Reader): Promise<void> {
  const rows = await db
    .all<Record<string, string | number | null>>(
      `select s.uid as subscription, s.sink as sink,
         count(d.uid) filter (where d.state = 'PENDING') as pending,
         count(d.uid) filter (where d.state = 'DELIVERED') as delivered,
         count(d.uid) filter (where d.state = 'FAILED') as failed,
         min(case when d.state = 'PENDING' then d.event_time end) as oldest_pending,
         (select e.last_error from deliveries e where e.parent_uid = s.uid and e.last_error is not null
          order by e.update_time desc limit 1) as last_error
       from subscriptions s left join deliveries d on d.parent_uid = s.uid group by s.uid, s.sink order by s.uid`,
    )
    .catch((e: Error) => {
      if (/deliveries/.test(e.message) && /no such table|does not exist/.test(e.message))
        throw new ConfigError('this database has no deliveries yet: start the server on it once');
      throw e;
    });
  if (rows.length === 0) console.log('no subscriptions');
  for (const r of rows) {
    const lag = r.oldest_pending ? `${Math.round((Date.now() - Date.parse(String(r.oldest_pending))) / 1000)} s` : '-';
    console.log(
      `${r.subscription} ${r.sink}\n  pending ${r.pending ?? 0}, delivered ${r.delivered ?? 0}, failed ${r.failed ?? 0}; lag ${lag}` +
        (r.last_error ? `; last error: ${r.last_error}` : ''),
    );
  }
}

try {
  const [command] = positionals;
  if (command !== 'tail' && command !== 'deliveries')
    throw new ConfigError(`say what to do: tail or deliveries (got ${command ?? 'nothing'}); --help explains`);
  const db = open();
  if (command === 'tail') await tail(db);
  else await deliveries(db);
  process.exit(0);
} catch (e) {
  console.error(`events: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
