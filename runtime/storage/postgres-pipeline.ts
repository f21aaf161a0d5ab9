// The statements of one PostgreSQL transaction, sent in batches: every statement asked for while the previous
// batch is out (or in the same turn of the event loop) goes in the next one, as one write of the extended
// protocol's messages behind one Sync, answered in one read. A round trip costs the server more CPU than the
// statement (a socket write and a wake-up each way: measured 35-40 µs here), so a create's begin goes with
// its first statement, the inserts that do not depend on each other go together, and the counts go with
// the commit. The database runs a batch's statements in order; after one fails it skips the rest up to the
// Sync, and each of those is rejected with the same error (the transaction is aborted then anyway).
// Reads outside a transaction go the same way: those asked in the same turn share a batch on one pooled
// connection, and one that fails fails alone (the ones after it are sent again).
import pg from 'pg';

/** pg's Result as its own Query fills it (not in its published types). */
interface Answer extends pg.QueryResult {
  addFields(fields: unknown): void;
  parseRow(fields: unknown): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}
const Answer = pg.Result as unknown as new (rowMode?: 'array') => Answer;
/** How pg sends a parameter: text, a Buffer or null (JSON stringified, arrays as PostgreSQL's literals). */
const { prepareValue } = (pg as unknown as { utils: { prepareValue(v: unknown): unknown } }).utils;

interface Statement {
  text: string;
  name: string | undefined;
  /** the parameters as pg sends them (text, Buffer or null) */
  values: unknown[];
  result: Answer;
  resolve(result: Answer): void;
  reject(error: unknown): void;
}

/** What pg's Connection offers a Submittable (pg's own Query uses the same). */
interface Connection {
  parsedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void };
  parse(m: { text: string; name: string }): void;
  bind(m: { statement: string; values: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(m: { portal: string }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
}

interface Message {
  fields: unknown;
}

/**
 * The columns each named statement answers, as PostgreSQL described them the first time a connection ran it:
 * afterwards the statement is bound and run without a Describe, and its rows read with these. A prepared
 * statement's result type never changes (runtime/storage/postgres-store.ts names every column it reads), so
 * neither does its description.
 */
const descriptions = new WeakMap<Connection, Map<string, unknown>>();

const listened = new WeakSet<pg.ClientBase>();

/** The batch each connection is running: its one ParseComplete listener hands the message on to it. */
const running = new WeakMap<Connection, Batch>();

/**
 * A client taken from the pool reports a connection that ends under it (a killed backend, a network cut) to its
 * statements, and also as an 'error' event, which pg-pool listens for only while the client is idle: without a
 * listener of its own the event would end the process. Nothing is lost: its statements are failed with it, and the
 * pool drops a client that can no longer query when it is given back.
 */
function listenForErrors(client: pg.ClientBase): void {
  if (listened.has(client)) return;
  listened.add(client);
  client.on('error', () => undefined);
}

/**
 * One batch, handed to pg's client as a Submittable: pg sends it when the connection is ready and routes each
 * answer message here, in order.
 */
class Batch {
  /** the statement whose answer is being read */
  private at = 0;
  /** statements sent with a Parse (named or not), in order, until PostgreSQL confirms it (ParseComplete) */
  private readonly parsing: Statement[] = [];
  private connection?: Connection;
  private error?: unknown;
  /** a row of the statement being read that the driver could not read: the statement fails with it */
  private rowFailure?: unknown;

  constructor(
    private readonly statements: Statement[],
    /**
     * called once every statement has answered or failed; `unsent`: those a failure before them kept from running;
     * `error`: the failure the batch ended with, if any (one after the last answer included)
     */
    private readonly done: (unsent: Statement[], error?: unknown) => void,
    /** statements that do not depend on each other: a failure fails its own statement only, and `done` gets the rest */
    private readonly independent = false,
  ) {}

  // A name is marked parsed only once PostgreSQL has parsed it: a batch that fails before may leave it unparsed.
  // Every Parse is answered by a ParseComplete in turn, an unnamed one's too.
  private parsed(): void {
    const s = this.parsing.shift();
    if (s?.name !== undefined && this.connection) this.connection.parsedStatements[s.name] = s.text;
  }

  submit(connection: Connection): null {
    this.connection = connection;
    running.set(connection, this);
    let described = descriptions.get(connection);
    if (!described) {
      // Once per connection (not per batch: adding and removing a listener each time cost more than the batch).
      connection.on('parseComplete', () => running.get(connection)?.parsed());
      descriptions.set(connection, (described = new Map<string, unknown>()));
    }
    const { parsedStatements } = connection;
    connection.stream.cork?.();
    try {
      for (const s of this.statements) {
        // A name seen twice in one batch is parsed once.
        if (
          s.name === undefined ||
          (parsedStatements[s.name] === undefined && !this.parsing.some((p) => p.name === s.name))
        ) {
          connection.parse({ text: s.text, name: s.name ?? '' });
          this.parsing.push(s);
        }
        connection.bind({ statement: s.name ?? '', values: s.values });
        const fields =
          s.name === undefined || parsedStatements[s.name] === undefined ? undefined : described.get(s.name);
        if (fields) s.result.addFields(fields);
        else connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: Message): void {
    const s = this.statements[this.at];
    if (!s) return;
    s.result.addFields(msg.fields);
    if (s.name !== undefined && this.connection) descriptions.get(this.connection)?.set(s.name, msg.fields);
  }

  handleDataRow(msg: Message): void {
    const s = this.statements[this.at];
    if (!s) return;
    try {
      s.result.addRow(s.result.parseRow(msg.fields));
    } catch (e) {
      this.rowFailure ??= e;
    }
  }

  handleCommandComplete(msg: { text: string }): void {
    const s = this.statements[this.at++];
    if (!s) return;
    const failure = this.rowFailure;
    this.rowFailure = undefined;
    if (failure !== undefined) return s.reject(failure);
    s.result.addCommandComplete(msg);
    s.resolve(s.result);
  }

  handleEmptyQuery(): void {
    const s = this.statements[this.at++];
    s?.resolve(s.result);
  }

  handleError(error: unknown): void {
    this.error = error;
    // The database skips what follows a failure up to the Sync; a lost connection ends them all.
    const alone = this.independent && error instanceof pg.DatabaseError;
    const failed = this.statements.slice(this.at, alone ? this.at + 1 : undefined);
    for (const s of failed) s.reject(error);
    this.at += failed.length;
    this.finish();
  }

  handleReadyForQuery(): void {
    this.finish();
  }

  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}

  private finish(): void {
    if (this.connection && running.get(this.connection) === this) running.delete(this.connection);
    this.done(this.statements.slice(this.at), this.error);
  }
}

/** A statement asked for, handed to `queue` to be sent; its result once it has run. */
function statementAsked(
  text: string,
  params: unknown[],
  name: string | undefined,
  rowMode: 'array' | undefined,
  queue: (s: Statement) => void,
): Promise<pg.QueryResult> {
  let values: unknown[];
  try {
    values = params.map((p) => prepareValue(p));
  } catch (e) {
    return Promise.reject(e);
  }
  return new Promise((resolve, reject) =>
    queue({ text, name, values, result: new Answer(rowMode), resolve: resolve as (r: Answer) => void, reject }),
  );
}

export class PipelinedStatements {
  private queued: Statement[] = [];
  private out = false;
  private scheduled = false;
  /** whether a statement was asked for (not only held): a transaction that asked none has nothing to end */
  asked = false;

  constructor(private readonly client: pg.PoolClient) {
    listenForErrors(client);
  }

  /**
   * A statement's result once it has run. `later`: it waits for the next statement asked for and goes with
   * it (a transaction's begin), rather than making a batch of its own.
   */
  query(text: string, params: unknown[], name?: string, rowMode?: 'array', later = false): Promise<pg.QueryResult> {
    return statementAsked(text, params, name, rowMode, (s) => {
      this.queued.push(s);
      if (later) return;
      this.asked = true;
      if (this.out || this.scheduled) return;
      this.scheduled = true;
      // Statements asked for in the same turn of the event loop (together(), and the commit after statements
      // left to it, Sql.atCommit) go in the same batch.
      setImmediate(() => {
        this.scheduled = false;
        this.send();
      });
    });
  }

  private send(): void {
    if (this.out || this.queued.length === 0) return;
    const batch = new Batch(this.queued, () => {
      this.out = false;
      this.send();
    });
    this.queued = [];
    this.out = true;
    void this.client.query(batch as unknown as pg.QueryConfig);
  }
}

/**
 * Reads outside a transaction, on the pool: the reads asked for in the same turn of the event loop (the gets of
 * requests that arrived together) go in one batch on one connection, one write and one answer for them all
 * rather than one round trip each. Each is answered on its own: one that fails (a statement timeout) fails alone,
 * and the reads after it, which the database skipped, are sent again on the same connection. A read waits for
 * those before it in its batch: reads that may take long (`maxBatch` 1) each go alone.
 */
export class PipelinedReads {
  private queued: Statement[] = [];
  /** reads whose batch waits for a connection */
  private connecting = 0;

  constructor(
    private readonly pool: pg.Pool,
    /** whether a connection that failed so is broken (not given back to the pool) */
    private readonly broken: (error: unknown) => boolean,
    /** reads in one batch at most: a burst takes several connections rather than queueing behind one */
    readonly maxBatch = 16,
  ) {}

  /** Reads waiting for a connection (not those asked for in this turn, which have not asked for one yet). */
  waiting(): number {
    return this.connecting;
  }

  query(text: string, params: unknown[], name?: string, rowMode?: 'array'): Promise<pg.QueryResult> {
    return statementAsked(text, params, name, rowMode, (s) => {
      const first = this.queued.length === 0;
      this.queued.push(s);
      if (this.queued.length === this.maxBatch) this.send();
      else if (first) setImmediate(() => this.send());
    });
  }

  private send(): void {
    const statements = this.queued;
    if (statements.length === 0) return;
    this.queued = [];
    this.connecting += statements.length;
    const sent = () => (this.connecting -= statements.length);
    this.pool.connect().then(
      (client) => {
        sent();
        this.run(client, statements);
      },
      (e: unknown) => {
        sent();
        for (const s of statements) s.reject(e);
      },
    );
  }

  private run(client: pg.PoolClient, statements: Statement[]): void {
    listenForErrors(client);
    const batch = new Batch(
      statements,
      (unsent, error) => {
        if (error === undefined || !this.broken(error)) {
          if (unsent.length > 0) this.run(client, unsent);
          else client.release();
          return;
        }
        // The connection is gone (PostgreSQL ended it: a restart, a terminated backend), perhaps after the last
        // answer: so are the reads after it, and it is not given back.
        for (const s of unsent) s.reject(error);
        client.release(error as Error);
      },
      true,
    );
    void client.query(batch as unknown as pg.QueryConfig);
  }
}
