// What every instance on one PostgreSQL database shares besides the records: the token signing keys, the
// page-token secret, the organization and owner made on first start, the issuer the servers sign as. On SQLite
// they are files of DATA_DIR (one machine); on PostgreSQL rows of server_state, so that an instance needs only
// DATABASE_URL and ISSUER_URL. Secrets are stored sealed (runtime/storage/secret-seal.ts) when SECRETS_KEY is
// set, the key outside the database; without it they are stored as they are, as a shared DATA_DIR held them.
import { EntitySchema } from '@mikro-orm/core';
import { ConfigError } from '../model/errors.js';
import type { SecretSeal } from './secret-seal.js';
import type { Sql } from './sql.js';
import type { Store } from './store.js';

interface ServerStateRow {
  name: string;
  value: string;
  /** raised by every change: what instances poll to see a change (one small row, by key) */
  version: number;
  updateTime: string;
}

export const serverStateEntity = new EntitySchema<ServerStateRow>({
  name: 'ServerState',
  tableName: 'server_state',
  properties: {
    name: { type: 'text', primary: true },
    value: { type: 'text' },
    version: { type: 'integer' },
    updateTime: { type: 'text' },
  },
});

export interface SharedValue {
  value: string;
  version: number;
}

/** The rows of server_state, over one store. */
export class ServerState {
  constructor(
    private readonly store: Store,
    private readonly seal?: SecretSeal,
  ) {}

  private field = (name: string) => `server_state.${name}`;

  private open(name: string, stored: string): string {
    try {
      return this.seal ? this.seal.unseal(stored, this.field(name)) : this.plain(name, stored);
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      throw new ConfigError(`SECRETS_KEY: the database's ${name} cannot be unsealed (${(e as Error).message})`);
    }
  }

  private plain(name: string, stored: string): string {
    if (stored.startsWith('sealed:'))
      throw new ConfigError(
        `SECRETS_KEY: the database's ${name} is sealed; set SECRETS_KEY as on the instances that sealed it`,
      );
    return stored;
  }

  private close = (name: string, value: string) => (this.seal ? this.seal.seal(value, this.field(name)) : value);

  /** The value of name, or undefined when none is stored; sql: a transaction's statements. */
  async read(name: string, sql: Sql = this.store.read): Promise<SharedValue | undefined> {
    const row = await this.stored(name, sql);
    return row && { value: this.open(name, row.stored), version: row.version };
  }

  private async stored(name: string, sql: Sql): Promise<{ stored: string; version: number } | undefined> {
    const [row] = await sql.all('select value, version from server_state where name = ?', [name]);
    return row && { stored: String(row.value), version: Number(row.version) };
  }

  /** The version of name's value: one row by key, cheap enough to poll. */
  async version(name: string): Promise<number | undefined> {
    const [row] = await this.store.read.values('select version from server_state where name = ?', [name]);
    return row && Number(row[0]);
  }

  /**
   * The value of name, made by make() when there is none: of several instances starting at once, one insert
   * wins (the others wait for its commit on the key, then insert nothing) and every one reads the winner's.
   * A value stored plain before SECRETS_KEY was set is sealed now.
   */
  async ensure(name: string, make: () => string | Promise<string>): Promise<SharedValue> {
    const found = await this.stored(name, this.store.read);
    if (found) {
      const value = this.open(name, found.stored);
      if (this.seal && !found.stored.startsWith('sealed:')) await this.sealNow(name, found.stored, value);
      return { value, version: found.version };
    }
    const made = await make();
    return this.store.transaction(async (sql) => {
      await this.insert(sql, name, made);
      return (await this.read(name, sql))!;
    });
  }

  /**
   * Inside sql's transaction: stores value as name's unless one is there; true when this one was stored. A
   * transaction that loses waits for the winner's commit first.
   */
  async insert(sql: Sql, name: string, value: string): Promise<boolean> {
    const inserted = await sql.run(
      'insert into server_state (name, value, version, update_time) values (?, ?, 1, ?) on conflict (name) do nothing',
      [name, this.close(name, value), new Date().toISOString()],
    );
    return inserted === 1;
  }

  /** Replaces name's value with what change makes of it, the row locked meanwhile: concurrent changes queue. */
  async change(name: string, change: (value: string) => string, sql?: Sql): Promise<SharedValue> {
    const run = async (sql: Sql) => {
      const [row] = await sql.all('select value, version from server_state where name = ? for update', [name]);
      if (!row) throw new Error(`the database holds no ${name}`);
      const value = change(this.open(name, String(row.value)));
      await sql.run('update server_state set value = ?, version = version + 1, update_time = ? where name = ?', [
        this.close(name, value),
        new Date().toISOString(),
        name,
      ]);
      return { value, version: Number(row.version) + 1 };
    };
    return sql ? run(sql) : this.store.transaction(run);
  }

  /** A value stored plain before SECRETS_KEY was set, sealed in place (unless changed meanwhile). */
  private async sealNow(name: string, stored: string, value: string): Promise<void> {
    await this.store.transaction((sql) =>
      sql.run('update server_state set value = ? where name = ? and value = ?', [
        this.close(name, value),
        name,
        stored,
      ]),
    );
  }
}
