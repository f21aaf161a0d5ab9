// npm run -s token [-- --identity UID] [--ttl SECONDS]: prints a token (and nothing else) for the owner made on
// first start, or for any identity. Reads DATA_DIR; works whether or not the server runs.
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { TokenIssuer, maxTokenSeconds } from '../runtime/access/issuer.js';
import { issuerInUse } from '../runtime/operate/issuer-record.js';
import { loadDataParts, openResources } from '../runtime/operate/open-resources.js';
import { isUidPath } from '../runtime/model/uid.js';
import { parseCommandLine } from './cli-args.js';

class TokenError extends Error {}

const { values } = parseCommandLine({
  name: 'token',
  usage: `
usage: npm run -s token [-- --identity UID] [--ttl SECONDS]
Prints a token of this server on stdout, and nothing else: for the owner made on first start, or for --identity.
  --identity UID   the identity the token is for (default: the owner in DATA_DIR/bootstrap.json)
  --ttl SECONDS    how long it lasts, 1 to ${maxTokenSeconds} (default ${maxTokenSeconds})
Reads DATA_DIR (./data); the server need not run. The token's issuer and audience are those the server of
DATA_DIR last started with (DATA_DIR/issuer.json), unless ISSUER_URL or TOKEN_AUDIENCE are set.`,
  options: { identity: { type: 'string' }, ttl: { type: 'string', default: String(maxTokenSeconds) } },
});

async function main(): Promise<void> {
  const config = readConfig();
  ensureDataDir(config);
  const ttl = Number(values.ttl);
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > maxTokenSeconds)
    throw new TokenError(`--ttl must be 1 to ${maxTokenSeconds} seconds`);
  let subject = values.identity;
  if (subject === undefined) {
    const bootstrap = readBootstrap(config.dataDir);
    if (!bootstrap)
      throw new TokenError(
        `no server has started with DATA_DIR=${config.dataDir} yet: run npm start once, or pass --identity UID`,
      );
    subject = bootstrap.owner;
  } else {
    if (!isUidPath(subject))
      throw new TokenError(
        `--identity must be an identity uid (40 hex characters, then /16 hex per level), got "${subject}"`,
      );
    const generated = await loadDataParts();
    const { store, resources } = await openResources({ ...config, log: false }, generated);
    try {
      if (!(await resources.table(generated.model.resources.identities.type).get(subject)))
        throw new TokenError(`no identity ${subject} in ${databaseName(config.database)}`);
    } finally {
      await store.close();
    }
  }
  const { issuer, audience } = issuerInUse(config);
  const tokens = await TokenIssuer.open(config.dataDir, issuer, audience);
  process.stdout.write(`${(await tokens.mint(subject, ttl)).token}\n`);
}

main().catch((e) => {
  console.error(
    `token: ${e instanceof TokenError || e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`,
  );
  process.exit(1);
});
