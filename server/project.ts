// A new API's npm start (npm run new-api writes its package.json; scripts/api.mjs runs this): serves the project
// in the working directory, its generated/ (made from its spec/) and its handlers/index.ts, with this framework's
// runtime. The Platform's handlers are not loaded.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseCommandLine } from '../scripts/cli-args.js';
import { settingsHelp } from '../runtime/operate/config.js';
import { serve } from './serve.js';

parseCommandLine({
  name: 'start',
  usage: `
usage: npm start
Serves this project's API (spec/ -> generated/, handlers/index.ts) until SIGTERM or SIGINT, generating first when
the spec changed. Takes no arguments; configured by the environment (a bad value stops the server with one line
naming the variable):
${settingsHelp()}
See the framework's docs/operating.md, "Configuration".`,
});

const name = (JSON.parse(readFileSync('package.json', 'utf8')) as { name?: string }).name ?? 'api';
await serve(name, async () => {
  const { loadGenerated } = await import('./server.js');
  return loadGenerated(resolve('generated'), resolve('handlers', 'index.ts'));
});
