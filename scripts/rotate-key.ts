// npm run rotate-key: adds a new signing key to DATA_DIR, or on PostgreSQL to the database every instance shares.
// New tokens are signed with it; the previous keys stay in the JWKS until every token they signed has expired, so
// nothing in flight breaks.
import { ConfigError, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { keyRow } from '../runtime/access/signing-keys.js';
import { issuerInUse } from '../runtime/operate/issuer-record.js';
import { loadDataParts, openResources } from '../runtime/operate/open-resources.js';
import { parseCommandLine } from './cli-args.js';

parseCommandLine({
  name: 'rotate-key',
  usage: `
usage: npm run rotate-key
Adds a new signing key to DATA_DIR/signing-keys.json (DATA_DIR: ./data), or with DATABASE_URL=postgres://... to
the database. New tokens are signed with it; older keys stay published in the JWKS until every token they signed
has expired. A running server (every instance on the database) picks it up within a second. Takes no arguments.`,
});

/** The key store of the configuration: the database's row on PostgreSQL (opened, and closed after). */
async function rotate(config: ReturnType<typeof readConfig>): Promise<{ kid: string; published: number }> {
  // The issuer is not used to mint here: the keys do not depend on it.
  const { issuer, audience } = issuerInUse(config);
  if (config.database.engine !== 'postgresql') {
    const tokens = await TokenIssuer.open(config.dataDir, issuer, audience);
    return { kid: await tokens.rotate(), published: tokens.jwks().keys.length };
  }
  const { store, shared } = await openResources({ ...config, log: false }, await loadDataParts());
  try {
    const tokens = await TokenIssuer.open(await keyRow(shared!), issuer, audience);
    tokens.close();
    return { kid: await tokens.rotate(), published: tokens.jwks().keys.length };
  } finally {
    await store.close();
  }
}

try {
  const config = readConfig();
  ensureDataDir(config);
  const { kid, published } = await rotate(config);
  console.log(`new signing key ${kid}; the JWKS now publishes ${published} key(s)`);
} catch (e) {
  console.error(`rotate-key: ${e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
