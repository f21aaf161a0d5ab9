// npm start: the server run by plain Node from its start-up build (scripts/server-build.mjs), which is built
// again first whenever a file it was made from has changed.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { currentBuild } from './server-build.mjs';

let main;
try {
  main = await currentBuild(fileURLToPath(new URL('..', import.meta.url)));
} catch (e) {
  // esbuild has printed what it could not compile; a missing generated/ is the usual cause.
  console.error(`platform-api: cannot build the server (${e.message.split('\n')[0]}); fix the error above`);
  process.exit(1);
}
performance.mark('build check');
// Stack traces name the TypeScript sources.
process.setSourceMapsEnabled(true);
await import(pathToFileURL(main).href);
