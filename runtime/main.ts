// npm start: serve the API until SIGTERM or SIGINT.
import { ConfigError, readConfig } from './config.js';
import { startServer } from './server.js';

try {
  const config = readConfig();
  const server = await startServer(config);
  console.log(`platform-api listening on ${server.url} (data in ${config.dataDir})`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: finishing requests in flight and closing the database`);
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
} catch (e) {
  if (e instanceof ConfigError) console.error(`platform-api: configuration error: ${e.message}`);
  else if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') console.error(`platform-api: cannot listen: ${(e as Error).message}; set PORT to a free port`);
  else console.error(`platform-api: cannot start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
