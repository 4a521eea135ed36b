import { parseArgs } from 'node:util';

/** The commands of the `mordn` executable. */
export type CliCommand = 'serve' | 'init' | 'migrate';

/** What a command line asks for, decided before anything is read, opened or started. */
export type CliInvocation =
  | { kind: 'run'; command: CliCommand; json: boolean }
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'error'; message: string };

const GENERAL_USAGE = `Usage: mordn <command> [options]

Commands:
  serve          Start the service (the default).
  init [--json]  Create a tenant, an agent, a published default config and a read+write key
                 on an empty database, and print how to make a first request.
  migrate        Apply pending database migrations and exit.

Options:
  -h, --help     Show help (for a command: mordn <command> --help) and change nothing.
  --version      Print the version of mordn.

Configuration comes from environment variables; see docs/configuration.md.
`;

const COMMAND_USAGE: Record<CliCommand, string> = {
  serve: `Usage: mordn serve

Starts the service: reads the configuration from environment variables (PORT, HOST,
MORDN_DATA_DIR, DATABASE_URL, …; see docs/configuration.md), applies pending migrations and listens until
SIGTERM or SIGINT.

Options:
  -h, --help  Show this help and change nothing.
`,
  init: `Usage: mordn init [--json]

On an empty database, creates a tenant, an agent with a published default config and a
read+write API key, and prints the key (shown only now) with a first request to try. On a
database that already has tenants it changes nothing.

Options:
  --json      Print the result as one JSON object.
  -h, --help  Show this help and change nothing.
`,
  migrate: `Usage: mordn migrate

Applies pending database migrations and exits (the service also applies them on every start).

Options:
  -h, --help  Show this help and change nothing.
`,
};

/** The options each command accepts besides `--help`. */
const COMMAND_FLAGS: Record<CliCommand, readonly string[]> = { serve: [], init: ['json'], migrate: [] };

function isCommand(value: string): value is CliCommand {
  return Object.hasOwn(COMMAND_USAGE, value);
}

/** The general usage text, for `mordn --help` and after an unknown command. */
export function generalUsage(): string {
  return GENERAL_USAGE;
}

/**
 * Reads `mordn`'s arguments (without the node and script paths). Pure: it decides between running
 * a command, printing help or the version, and refusing the line, so `--help` can never run
 * anything and an unknown option is refused before any configuration is read.
 *
 * @example
 * parseCommandLine(['init', '--json']); // { kind: 'run', command: 'init', json: true }
 * parseCommandLine(['serve', '--help']); // { kind: 'help', text: 'Usage: mordn serve …' }
 * parseCommandLine(['init', '--jsno']); // { kind: 'error', message: 'Unknown option "--jsno" for mordn init. …' }
 */
export function parseCommandLine(argv: readonly string[]): CliInvocation {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'run', command: 'serve', json: false };
  if (first === '--version') {
    return rest.length === 0 ? { kind: 'version' } : { kind: 'error', message: '--version takes no arguments.' };
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    const topic = rest[0];
    if (topic !== undefined && isCommand(topic)) return { kind: 'help', text: COMMAND_USAGE[topic] };
    return { kind: 'help', text: GENERAL_USAGE };
  }
  if (!isCommand(first)) {
    const what = first.startsWith('-') ? 'option' : 'command';
    return { kind: 'error', message: `Unknown ${what} "${first}".` };
  }
  return parseCommandOptions(first, rest);
}

function parseCommandOptions(command: CliCommand, args: readonly string[]): CliInvocation {
  const { tokens } = parseArgs({
    args: [...args],
    options: { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  let help = false;
  let json = false;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      return { kind: 'error', message: `mordn ${command} takes no arguments (got "${token.value}").` };
    }
    const known = token.name === 'help' || COMMAND_FLAGS[command].includes(token.name);
    if (!known) {
      return { kind: 'error', message: `Unknown option "${token.rawName}" for mordn ${command}.` };
    }
    if (token.value !== undefined) {
      return { kind: 'error', message: `The option "${token.rawName}" takes no value (got "${token.value}").` };
    }
    if (token.name === 'help') help = true;
    if (token.name === 'json') json = true;
  }
  if (help) return { kind: 'help', text: COMMAND_USAGE[command] };
  return { kind: 'run', command, json };
}

/** The usage text of one command, shown after a refused command line. */
export function commandUsage(command: string): string {
  return isCommand(command) ? COMMAND_USAGE[command] : GENERAL_USAGE;
}
