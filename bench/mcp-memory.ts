import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.js';
import { composeDependencies } from '../src/compose.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';
import { ADMIN_TOKEN, provisionAgent } from './support.js';

const ROUNDS = 7;
const CALLS_PER_ROUND = 5_000;

/**
 * `npm run bench -- mcp-memory` (needs `--expose-gc`, which the script passes): the service's
 * live heap after a forced collection, every 5k MCP `tools/call`s (refused by the gate, so only
 * the MCP path runs), 35k in all. A child's RSS (the `sandbox` benchmark) also counts garbage
 * not yet collected; this shows whether anything is kept.
 */
export async function benchMcpMemory(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc (npm run bench -- mcp-memory does)');
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-bench-memory-'));
  const config = loadConfig({
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_DATA_DIR: dataDir,
    PORT: '0',
  });
  const deps = await composeDependencies(config, { logger: createLogger({ level: 'warn', secrets: [] }) });
  const app = createApp(deps);
  const server = await startServer({ fetch: app.fetch, host: '127.0.0.1', port: 0 });
  try {
    const key = await provisionAgent(server.url, false);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'sandbox_exec', arguments: { command: 'true' } },
    });
    const call = async () => {
      const response = await app.fetch(
        new Request('http://127.0.0.1/v1/sandbox/mcp', {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'x-chat-user': 'bench-user',
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body,
        }),
      );
      await response.text();
    };
    const rows: Array<{ calls: number; 'heap MiB': string; 'RSS MiB': string }> = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (let index = 0; index < CALLS_PER_ROUND; index += 1) await call();
      gc();
      const memory = process.memoryUsage();
      rows.push({
        calls: round * CALLS_PER_ROUND,
        'heap MiB': (memory.heapUsed / 2 ** 20).toFixed(1),
        'RSS MiB': (memory.rss / 2 ** 20).toFixed(1),
      });
    }
    console.log('\nLive heap after a forced GC across MCP calls (in-process):');
    console.table(rows);
    const first = Number(rows[0]?.['heap MiB']);
    const last = Number(rows.at(-1)?.['heap MiB']);
    console.log(`heap from ${CALLS_PER_ROUND} to ${ROUNDS * CALLS_PER_ROUND} calls: ${(last - first).toFixed(1)} MiB`);
  } finally {
    await server.close(1000);
    await deps.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
