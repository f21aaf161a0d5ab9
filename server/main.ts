// npm start: serve the API until SIGTERM or SIGINT.
import { parseCommandLine } from '../scripts/cli-args.js';
import { ConfigError, databaseName, ensureDataDir, readConfig, settingsHelp } from '../runtime/operate/config.js';
import { startUpPhases } from '../runtime/operate/start-up.js';

parseCommandLine({
  name: 'start',
  usage: `
usage: npm start
Serves the API until SIGTERM or SIGINT. Installs and generates first as needed. Takes no arguments; configured by
the environment (a bad value stops the server with one line naming the variable):
${settingsHelp()}
See docs/operating.md, "Configuration".`,
});

try {
  const config = readConfig();
  const loose = ensureDataDir(config);
  if (loose) console.error(`platform-api: warning: ${loose}`);
  // Loaded only now: --help and configuration errors answer without loading the generated server.
  const [{ startServer }, { generated }] = await Promise.all([import('./server.js'), import('./generated.js')]);
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
  say(`platform-api ${release} listening on ${server.url} (HTTP and gRPC${grpc}; data in ${data})`, {
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
    say(`${signal}: draining for ${config.drainMs / 1000} s (/readyz answers 503), then finishing requests in flight`, {
      signal,
    });
    server.drain();
    await new Promise((resolve) => setTimeout(resolve, config.drainMs));
    await server.close();
    say('platform-api stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
} catch (e) {
  if (e instanceof ConfigError) console.error(`platform-api: configuration error: ${e.message}`);
  else if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
    console.error(`platform-api: cannot listen: ${(e as Error).message}; set PORT to a free port`);
  else console.error(`platform-api: cannot start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
