// npm run -s token [-- --identity UID] [--ttl SECONDS], or in the release `node server/token.js [...]`: prints a
// token (and nothing else) for the owner made on first start, or for any identity. Reads DATA_DIR, or on
// PostgreSQL the database alone; works whether or not the server runs. The generated model is imported by name,
// so that the release's bundle holds it (the release has no generated/*.ts).
import { readBootstrap, sharedBootstrap } from '../runtime/access/bootstrap.js';
import { ConfigError, databaseName, ensureDataDir, readConfig, type Config } from '../runtime/operate/config.js';
import { TokenIssuer, maxTokenSeconds } from '../runtime/access/issuer.js';
import { issuerInUse, sharedIssuer } from '../runtime/operate/issuer-record.js';
import { keyRow } from '../runtime/access/signing-keys.js';
import type { ServerState } from '../runtime/storage/server-state.js';
import {
  defaultGeneratedDir,
  loadDataParts,
  openResources,
  type DataParts,
} from '../runtime/operate/open-resources.js';
import { resolve } from 'node:path';
import { isUidPath } from '../runtime/model/uid.js';
import { parseCommandLine } from '../scripts/cli-args.js';
import type { EntitySchema } from '@mikro-orm/core';
import { entities } from '../generated/entities.js';
import { apiModel } from '../generated/model.js';

class TokenError extends Error {}

const { values } = parseCommandLine({
  name: 'token',
  usage: `
usage: npm run -s token [-- --identity UID] [--ttl SECONDS]
   or, in the release: node server/token.js [--identity UID] [--ttl SECONDS]
Prints a token of this server on stdout, and nothing else: for the owner made on first start, or for --identity.
  --identity UID   the identity the token is for (default: the owner in DATA_DIR/bootstrap.json)
  --ttl SECONDS    how long it lasts, 1 to ${maxTokenSeconds} (default ${maxTokenSeconds})
  --generated DIR  the API's generated/ that --identity is checked with (default this checkout's; a new API's
                   project passes its own: npm run token in it)
Reads DATA_DIR (./data), or with DATABASE_URL=postgres://... the database alone; the server need not run. The
token's issuer and audience are those the server last started with (DATA_DIR/issuer.json, or the database's
record), unless ISSUER_URL or TOKEN_AUDIENCE are set.`,
  options: {
    identity: { type: 'string' },
    ttl: { type: 'string', default: String(maxTokenSeconds) },
    generated: { type: 'string' },
  },
});

/** The owner made on first start: the database's record on PostgreSQL, else DATA_DIR's. */
async function owner(config: Config, shared: ServerState | undefined): Promise<string> {
  const bootstrap = (shared && (await sharedBootstrap(shared))) ?? readBootstrap(config.dataDir);
  if (!bootstrap)
    throw new TokenError(
      `no server has started ${shared ? `on ${databaseName(config.database)}` : `with DATA_DIR=${config.dataDir}`} yet: run npm start once, or pass --identity UID`,
    );
  return bootstrap.owner;
}

/**
 * On PostgreSQL everything comes from the database (keys, owner, issuer record): DATA_DIR need not be a
 * server's. On SQLite the database is opened only to check --identity.
 */
async function main(): Promise<void> {
  const config = readConfig();
  ensureDataDir(config);
  const ttl = Number(values.ttl);
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > maxTokenSeconds)
    throw new TokenError(`--ttl must be 1 to ${maxTokenSeconds} seconds`);
  const subject = values.identity;
  if (subject !== undefined && !isUidPath(subject))
    throw new TokenError(
      `--identity must be an identity uid (40 hex characters, then /16 hex per level), got "${subject}"`,
    );
  const onPostgres = config.database.engine === 'postgresql';
  if (subject === undefined && !onPostgres) return mint(config, await owner(config, undefined));
  const generated: DataParts = values.generated
    ? await loadDataParts(resolve(values.generated))
    : { dir: defaultGeneratedDir, model: apiModel, entities: entities as EntitySchema[] };
  const { store, resources, shared } = await openResources({ ...config, log: false }, generated);
  try {
    if (subject !== undefined && !(await resources.table(generated.model.resources.identities.type).get(subject)))
      throw new TokenError(`no identity ${subject} in ${databaseName(config.database)}`);
    await mint(config, subject ?? (await owner(config, shared)), shared);
  } finally {
    await store.close();
  }
}

async function mint(config: Config, subject: string, shared?: ServerState): Promise<void> {
  const { issuer, audience } = issuerInUse(config, shared && (await sharedIssuer(shared)));
  const tokens = await TokenIssuer.open(shared ? await keyRow(shared) : config.dataDir, issuer, audience);
  try {
    process.stdout.write(`${(await tokens.mint(subject, Number(values.ttl))).token}\n`);
  } finally {
    tokens.close();
  }
}

main().catch((e) => {
  console.error(
    `token: ${e instanceof TokenError || e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`,
  );
  process.exit(1);
});
