import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { packageRoot } from '../../src/package-root.js';
import { connectSupervisor, type SupervisorConnection } from '../../src/sandbox/supervisor/supervisor-connection.js';

/**
 * The real `supervisor.py` as a plain child process of this one (no sandbox around it; the
 * backends run the same program inside theirs), and the connection speaking to it. The caller
 * kills `child` when done.
 */
export function spawnPlainSupervisor(): { child: ChildProcess; connection: SupervisorConnection } {
  const child = spawn('/usr/bin/python3', ['-I', '-S', `${packageRoot()}/src/sandbox/supervisor/supervisor.py`], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const connection = connectSupervisor({
    stdin: child.stdin as NonNullable<ChildProcess['stdin']>,
    stdout: child.stdout as Readable,
  });
  return { child, connection };
}
