import { benchChat } from './chat.js';
import { benchDocker } from './docker.js';
import { benchHealth } from './health.js';
import { benchMcpMemory } from './mcp-memory.js';
import { benchSandbox } from './sandbox.js';
import { benchUploads } from './uploads.js';

/** `npm run bench -- <name>…`; with no name, every benchmark runs. */
const BENCHMARKS: Record<string, () => Promise<unknown>> = {
  health: () => benchHealth(),
  uploads: () => benchUploads(),
  sandbox: () => benchSandbox(),
  chat: () => benchChat(),
  docker: () => benchDocker(),
  'mcp-memory': () => benchMcpMemory(),
};

const requested = process.argv.slice(2);
const names = requested.length > 0 ? requested : Object.keys(BENCHMARKS);
for (const name of names) {
  const run = BENCHMARKS[name];
  if (!run) {
    console.error(`Unknown benchmark "${name}". Available: ${Object.keys(BENCHMARKS).join(', ')}`);
    process.exit(2);
  }
  await run();
}
