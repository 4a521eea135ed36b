import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createBwrapBackend } from '../../src/sandbox/bwrap/bwrap-backend.js';

/**
 * The bare-bwrap baseline in its own process, started (and pinned) exactly like the service, so
 * both spawn their sandboxes from a Node process on the same core. Each `run` line on stdin runs
 * `true` in one sandbox and answers with the milliseconds it took; `{"port":0}` says it is ready.
 */
const scratch = await mkdtemp(path.join(tmpdir(), 'mordn-bench-bare-'));
const backend = createBwrapBackend({ workspacesDir: scratch });
await backend.ensureWorkspace('bench-bare');
process.stderr.write(`${JSON.stringify({ port: 0 })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== 'run') break;
  const started = performance.now();
  const result = await backend.exec('bench-bare', { command: 'true', timeoutMs: 10_000, maxOutputBytes: 1024 });
  if (result.exitCode !== 0) throw new Error(`bare sandbox exited ${result.exitCode}`);
  process.stdout.write(`${performance.now() - started}\n`);
}
await rm(scratch, { recursive: true, force: true });
