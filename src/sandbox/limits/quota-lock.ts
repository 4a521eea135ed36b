import { spawn } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';

/** How long to wait for another process (a second service replica) to finish with the workspace. */
const LOCK_WAIT_SECONDS = 60;
/** `flock -E`: the exit status meaning the wait ran out (distinct from anything `cat` returns). */
const TIMEOUT_STATUS = 75;
/** Rounds of "locked a file that its holder deleted meanwhile" before giving up. */
const MAX_ATTEMPTS = 5;

/** Runs `flock --no-fork <file> cat` and resolves once `cat` runs, i.e. once the lock is held. */
function lockOnce(file: string): Promise<{ pid: number; release: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'flock',
      ['--no-fork', '-w', String(LOCK_WAIT_SECONDS), '-E', String(TIMEOUT_STATUS), file, 'cat'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    let held = false;
    const closed = new Promise<void>((settle) => child.once('close', () => settle()));
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    // EPIPE when flock ends before reading: the close handler reports why.
    child.stdin.on('error', () => undefined);
    child.once('error', (error: NodeJS.ErrnoException) => {
      const missing = error.code === 'ENOENT';
      reject(
        new Error(missing ? 'flock is not installed (util-linux), or not on PATH' : `flock: ${error.message}`, {
          cause: error,
        }),
      );
    });
    child.stdout.once('data', () => {
      held = true;
      child.stdout.resume();
      const release = async () => {
        child.stdin.end();
        await closed;
      };
      if (child.pid === undefined) void release().then(() => reject(new Error('flock started without a pid.')));
      else resolve({ pid: child.pid, release });
    });
    child.once('close', (code) => {
      if (held) return;
      const reason =
        code === TIMEOUT_STATUS
          ? `another process has held it for ${LOCK_WAIT_SECONDS} s`
          : `flock exited with status ${code}: ${stderr.trim() || 'no message'}`;
      reject(new Error(`Could not lock ${file}: ${reason}.`));
    });
    child.stdin.write('\n');
  });
}

/** Whether one of the process's open descriptors is the file now named `file` (descriptor 3, in practice). */
async function holdsFile(pid: number, file: string): Promise<boolean> {
  const named = await stat(file).catch(() => undefined);
  if (!named) return false;
  const descriptors = await readdir(`/proc/${pid}/fd`).catch(() => []);
  for (const descriptor of descriptors) {
    const open = await stat(`/proc/${pid}/fd/${descriptor}`).catch(() => undefined);
    if (open && open.ino === named.ino && open.dev === named.dev) return true;
  }
  return false;
}

/**
 * Takes an exclusive `flock` on `file` (created when missing) and resolves, once it is held,
 * with the function that lets it go. Node has no flock, so a `flock --no-fork <file> cat` child
 * holds it (flock becomes `cat`, keeping the locked descriptor): `cat` echoes a byte once the
 * lock is held and exits when its stdin closes, which also frees the lock when this process dies,
 * whatever kills it. A lock on a file its previous holder deleted is no lock, so the locked
 * descriptor is checked against the name and the lock taken again when they differ; the holder
 * may therefore delete the file (as removing a workspace does).
 *
 * Every change to a workspace's image or mount happens under its lock, so two replicas on one
 * host never mount one image through two loop devices (which would corrupt it), grow it while
 * the other mounts it, or migrate one directory twice.
 *
 * @example
 * const release = await holdLock('/srv/workspaces/.images/ws_1.lock');
 * try {
 *   // … mount, grow, remove …
 * } finally {
 *   await release();
 * }
 */
export async function holdLock(file: string): Promise<() => Promise<void>> {
  for (let attempt = 1; ; attempt += 1) {
    const lock = await lockOnce(file);
    if (await holdsFile(lock.pid, file)) return lock.release;
    await lock.release();
    if (attempt === MAX_ATTEMPTS) throw new Error(`Could not lock ${file}: it kept being deleted and made again.`);
  }
}
