// npm start: serve the API until SIGTERM or SIGINT.
import { parseCommandLine } from '../scripts/cli-args.js';
import { settingsHelp } from '../runtime/operate/config.js';
import { serve } from './serve.js';

parseCommandLine({
  name: 'start',
  usage: `
usage: npm start
Serves the API until SIGTERM or SIGINT. Installs and generates first as needed. Takes no arguments; configured by
the environment (a bad value stops the server with one line naming the variable):
${settingsHelp()}
See docs/operating.md, "Configuration".`,
});

await serve('platform-api', async () => (await import('./generated.js')).generated);
