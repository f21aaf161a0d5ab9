// npm run rotate-key: adds a new signing key to DATA_DIR. New tokens are signed with it; the previous keys
// stay in the JWKS until every token they signed has expired, so nothing in flight breaks.
import { ConfigError, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { issuerInUse } from '../runtime/operate/issuer-record.js';
import { parseCommandLine } from './cli-args.js';

parseCommandLine({
  name: 'rotate-key',
  usage: `
usage: npm run rotate-key
Adds a new signing key to DATA_DIR/signing-keys.json (DATA_DIR: ./data). New tokens are signed with it; older
keys stay published in the JWKS until every token they signed has expired. A running server picks it up within
a second. Takes no arguments.`,
});

try {
  const config = readConfig();
  ensureDataDir(config);
  const { issuer, audience } = issuerInUse(config);
  const tokens = await TokenIssuer.open(config.dataDir, issuer, audience);
  const kid = await tokens.rotate();
  console.log(`new signing key ${kid}; the JWKS now publishes ${tokens.jwks().keys.length} key(s)`);
} catch (e) {
  console.error(`rotate-key: ${e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
