// What npm start does, for whichever API: read the configuration, load the API's generated parts and handlers,
// serve them until SIGTERM or SIGINT. server/main.ts serves the Platform; server/project.ts a new API's project.
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { startUpPhases } from '../runtime/operate/start-up.js';
import type { GeneratedParts } from './server.js';

/** name: what the start and stop lines call the server; load: the API's parts, loaded once configured. */
export async function serve(name: string, load: () => Promise<GeneratedParts>): Promise<void> {
  try {
    const config = readConfig();
    const loose = ensureDataDir(config);
    if (loose) console.error(`${name}: warning: ${loose}`);
    // Loaded only now: --help and configuration errors answer without loading the generated server.
    const [{ startServer }, generated] = await Promise.all([import('./server.js'), load()]);
    performance.mark('modules');
    const server = await startServer(config, generated);
    const grpc = server.grpcPort === undefined ? '' : `, gRPC alone on port ${server.grpcPort}`;
    // LOG=on: the same JSON lines as the request log (one object a line); off: plain lines for a terminal.
    const say = (message: string, fields: Record<string, unknown> = {}) =>
      console.log(
        config.log ? JSON.stringify({ time: new Date().toISOString(), level: 'info', message, ...fields }) : message,
      );
    const { release } = generated.model.info;
    // Where the data is: the SQLite file, or PostgreSQL's host and database (never its password).
    const data = databaseName(config.database);
    say(`${name} ${release} listening on ${server.url} (HTTP and gRPC${grpc}; data in ${data})`, {
      release,
      url: server.url,
      startUpMs: startUpPhases(),
    });
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      // Orchestrators send SIGTERM and then stop routing here: until their load balancer has seen /readyz turn 503,
      // new requests keep coming, and are answered, not reset.
      say(
        `${signal}: draining for ${config.drainMs / 1000} s (/readyz answers 503), then finishing requests in flight`,
        {
          signal,
        },
      );
      server.drain();
      await new Promise((resolve) => setTimeout(resolve, config.drainMs));
      await server.close();
      say(`${name} stopped`);
      process.exit(0);
    };
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.on('SIGINT', () => void stop('SIGINT'));
  } catch (e) {
    if (e instanceof ConfigError) console.error(`${name}: configuration error: ${e.message}`);
    else if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
      console.error(`${name}: cannot listen: ${(e as Error).message}; set PORT to a free port`);
    else console.error(`${name}: cannot start: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
