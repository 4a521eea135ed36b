import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';

const runFile = promisify(execFile);

/** `\040`-style escapes of /proc/self/mounts. */
function unescapeMountPath(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * Removes a test's workspaces root: first every filesystem mounted below it (workspace quota
 * filesystems, which free their loop devices as they go), deepest first, then the files.
 */
export async function removeWorkspacesRoot(root: string): Promise<void> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((line) => unescapeMountPath(line.split(' ')[1] ?? ''))
    .filter((mountPoint) => mountPoint === root || mountPoint.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of mounts) await runFile('umount', ['-l', mountPoint]).catch(() => undefined);
  // A spare image still being made by a backend that was not closed can land meanwhile.
  await rm(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
