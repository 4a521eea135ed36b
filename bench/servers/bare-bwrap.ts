import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { detectHostLayout } from '../../src/sandbox/bwrap/bwrap-arguments.js';
import { launchSandbox } from '../../src/sandbox/bwrap/run-sandboxed.js';
import { seccompFilter } from '../../src/sandbox/limits/seccomp.js';

/**
 * The baselines of a warm exec, in their own process started (and pinned) exactly like the
 * service. Each `run` line on stdin spawns one fresh bwrap sandbox of the same shape as a
 * workspace's (namespaces, mounts, seccomp filter and, for a root service, the same privilege
 * drop) running `/bin/true`; each `spawn` line runs a plain `child_process.spawn('true')` (default
 * stdio, done at 'close'). Either answers with the milliseconds it took; `{"port":0}` says it is
 * ready.
 */
const scratch = await mkdtemp(path.join(tmpdir(), 'mordn-bench-bare-'));
const layout = await detectHostLayout();
const seccomp = await seccompFilter();
const hostUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
if (hostUser) await import('node:fs/promises').then(({ chown }) => chown(scratch, hostUser.uid, hostUser.gid));
// The bench stops its servers with SIGTERM: the scratch directory goes with this one too.
process.once('SIGTERM', () => {
  void rm(scratch, { recursive: true, force: true }).finally(() => process.exit(0));
});
process.stderr.write(`${JSON.stringify({ port: 0 })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'spawn') {
    const started = performance.now();
    await new Promise((resolve, reject) => spawn('true').once('error', reject).once('close', resolve));
    process.stdout.write(`${performance.now() - started}\n`);
    continue;
  }
  if (line !== 'run') break;
  const started = performance.now();
  const sandbox = await launchSandbox({
    bwrapPath: 'bwrap',
    shape: { layout, workspaceDirectory: scratch, tmpBytes: 64 * 1024 ** 2, seccomp },
    command: ['/bin/true'],
    stdin: false,
    ...(hostUser ? { hostUser } : {}),
  });
  sandbox.stdout.resume();
  sandbox.stderr.resume();
  const exit = await sandbox.exited;
  if (exit.exitCode !== 0) throw new Error(`bare sandbox exited ${exit.exitCode}`);
  process.stdout.write(`${performance.now() - started}\n`);
}
await rm(scratch, { recursive: true, force: true });
