// The command line of every CLI: --help (-h) prints the usage on stdout and exits 0; an unknown option or a
// malformed one is one line on stderr and exit 2, before the CLI does anything.
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandLine {
  /** the CLI's name as it starts its error lines, e.g. "token" */
  name: string;
  /** the text --help prints */
  usage: string;
  options?: Options;
  allowPositionals?: boolean;
}

const refuse = (name: string, problem: string): never => {
  process.stderr.write(`${name}: ${problem}; see --help\n`);
  process.exit(2);
};

export function parseCommandLine<O extends Options>(cli: CommandLine & { options?: O }, args = process.argv.slice(2)) {
  const options = { ...cli.options, help: { type: 'boolean', short: 'h' } } as O & {
    help: { type: 'boolean'; short: 'h' };
  };
  // A lenient pass first, so --help answers even beside a mistake and an unknown option is named as typed.
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help')) {
    process.stdout.write(`${cli.usage.trim()}\n`);
    process.exit(0);
  }
  const unknown = tokens.find((t) => t.kind === 'option' && !(t.name in options));
  if (unknown?.kind === 'option') refuse(cli.name, `unknown option ${unknown.rawName}`);
  try {
    return parseArgs({ args, options, allowPositionals: cli.allowPositionals ?? false, strict: true });
  } catch (e) {
    // Node's messages end with a suggestion of their own; the first sentence is the problem.
    return refuse(cli.name, (e as Error).message.split('. ')[0].replace(/\.$/, ''));
  }
}
