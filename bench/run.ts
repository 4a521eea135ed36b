import { benchAnswers } from './answers.js';
import { benchArtifacts } from './artifacts.js';
import { benchChat } from './chat.js';
import { benchDocker } from './docker.js';
import { benchEgress } from './egress.js';
import { benchExecProgress } from './exec-progress.js';
import { benchHealth } from './health.js';
import { benchLoad } from './load.js';
import { benchMcpEras } from './mcp-eras.js';
import { benchMcpMemory } from './mcp-memory.js';
import { benchMetering } from './metering.js';
import { benchSandbox } from './sandbox.js';
import { benchSdkFloor } from './sdk-floor.js';
import { benchSoak } from './soak.js';
import { benchUploads } from './uploads.js';

/** Flags given after the names (`--minutes 2` or `--minutes=2`), as numbers. */
type BenchFlags = Record<string, number>;

/**
 * `npm run bench -- <name>… [--flag value]…`; with no name, every benchmark runs except `soak`
 * (minutes long: run it by name). Flags: `--streams N` (load and sdk-floor, default 200), `--pure-only 1`
 * (load: the default pure chat and its floor alone), `--rounds N` (load: pure-chat rounds, default 3; exec-progress:
 * calls per mode, default 1; metering: alternating rounds, default 6), `--seconds N` (exec-progress: how long its command prints, default 30), `--minutes N`
 * (soak, default 10) and
 * `--sample-seconds N` (soak, default 60). `MORDN_BENCH_RESUMABLE=1` sends chat turns with
 * `X-Chat-Resumable: 1`; `DATABASE_URL` runs the chat benches on PostgreSQL.
 */
const BENCHMARKS: Record<string, (flags: BenchFlags) => Promise<unknown>> = {
  health: () => benchHealth(),
  uploads: () => benchUploads(),
  artifacts: () => benchArtifacts(),
  sandbox: () => benchSandbox(),
  'exec-progress': (flags) =>
    benchExecProgress({
      ...(flags.seconds === undefined ? {} : { seconds: flags.seconds }),
      ...(flags.rounds === undefined ? {} : { rounds: flags.rounds }),
    }),
  chat: () => benchChat(),
  answers: (flags) => benchAnswers(flags.rounds === undefined ? {} : { rounds: flags.rounds }),
  metering: (flags) => benchMetering(flags.rounds === undefined ? {} : { rounds: flags.rounds }),
  docker: () => benchDocker(),
  egress: () => benchEgress(),
  'mcp-memory': () => benchMcpMemory(),
  'mcp-eras': () => benchMcpEras(),
  load: (flags) =>
    benchLoad({
      ...(flags.streams === undefined ? {} : { streams: flags.streams }),
      ...(flags['pure-only'] === 1 ? { pureOnly: true } : {}),
      ...(flags.rounds === undefined ? {} : { rounds: flags.rounds }),
    }),
  'sdk-floor': (flags) => benchSdkFloor(flags.streams === undefined ? {} : { streams: flags.streams }),
  soak: (flags) =>
    benchSoak({
      ...(flags.minutes === undefined ? {} : { minutes: flags.minutes }),
      ...(flags['sample-seconds'] === undefined ? {} : { sampleSeconds: flags['sample-seconds'] }),
    }),
};
const FLAGS = new Set(['streams', 'minutes', 'sample-seconds', 'pure-only', 'rounds', 'seconds']);
const NOT_BY_DEFAULT = new Set(['soak']);

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

const requested: string[] = [];
const flags: BenchFlags = {};
const argv = process.argv.slice(2);
for (let index = 0; index < argv.length; index += 1) {
  const argument = argv[index] as string;
  if (!argument.startsWith('--')) {
    requested.push(argument);
    continue;
  }
  const [name, inline] = argument.slice(2).split('=', 2) as [string, string | undefined];
  if (!FLAGS.has(name)) fail(`Unknown flag "--${name}". Flags: ${[...FLAGS].map((flag) => `--${flag}`).join(', ')}`);
  let value = inline;
  if (value === undefined) {
    index += 1;
    value = argv[index];
  }
  const number = Number(value);
  if (value === undefined || !Number.isFinite(number) || number <= 0) fail(`--${name} needs a positive number`);
  flags[name] = number;
}
const names = requested.length > 0 ? requested : Object.keys(BENCHMARKS).filter((name) => !NOT_BY_DEFAULT.has(name));
for (const name of names) {
  const run = BENCHMARKS[name];
  if (!run) fail(`Unknown benchmark "${name}". Available: ${Object.keys(BENCHMARKS).join(', ')}`);
  await run(flags);
}
