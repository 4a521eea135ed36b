import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { lstat, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { procStatFields } from './proc-stat.js';

/**
 * Which host wrote a temporary file: replicas may share one data directory, and only a file of
 * this host can be checked against the processes that are alive.
 */
const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const TEMPORARY_NAME =
  /^[a-z]+-([0-9a-f]{8})-(\d+)-(\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22), or
 * undefined when there is no such process or no procfs. With the pid it names one process for
 * good: a container's service is pid 1 at every start, and a pid alone would make the leftovers
 * of the run before look like the live process's own.
 */
function processStartTicks(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return procStatFields(stat)[19];
  } catch {
    return undefined;
  }
}

/** This process's start time; `0` where procfs is missing (the pid alone then tells). */
const OWN_START = processStartTicks('self') ?? '0';

/** A file nobody can tell the owner of (another host's, or an older naming) is removed after this. */
export const DEFAULT_TEMPORARY_FILE_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * A fresh path in `directory` for bytes in transit, named after this host and process (its pid and
 * start time) so that a later start-up can tell a crashed writer's leftovers from a live replica's
 * files in progress.
 *
 * @example
 * const tempPath = temporaryFilePath(path.join(dataDir, 'tmp'), 'upload');
 */
export function temporaryFilePath(directory: string, purpose: string): string {
  return path.join(directory, `${purpose}-${HOST_TAG}-${process.pid}-${OWN_START}-${randomUUID()}`);
}

/** Whether the process that named a file is still running: same pid, same start time. */
function isWriterAlive(pid: number, started: string): boolean {
  if (pid === process.pid) return started === OWN_START;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if (error instanceof Error && 'code' in error && error.code === 'ESRCH') return false;
  }
  const current = processStartTicks(pid);
  // Without procfs a running pid has to be taken for the writer.
  return current === undefined || started === '0' || current === started;
}

/** Whether no live process can still be writing `name`, last modified at `modifiedMs`. */
function isOrphan(name: string, modifiedMs: number, cutoffMs: number): boolean {
  const match = TEMPORARY_NAME.exec(name);
  if (match && match[1] === HOST_TAG && !isWriterAlive(Number(match[2]), match[3] as string)) return true;
  return modifiedMs < cutoffMs;
}

export interface TemporaryFileSweepOptions {
  /** How old a file of unknown or live ownership must be to go anyway; defaults to a day. */
  graceMs?: number;
  /** Clock in epoch milliseconds. */
  now?: () => number;
}

/**
 * Removes what writers killed mid-transfer (a `kill -9`, a crash, a power cut) left in the
 * temporary `directories`: every regular file named by a process of this host that is no longer
 * running (its pid gone, or taken by a process that started later), and every other file
 * untouched for the grace period. A live replica's files in progress stay. Missing directories
 * are skipped. Returns the paths removed, for the start-up log.
 *
 * @example
 * const removed = await removeOrphanedTemporaryFiles([path.join(dataDir, 'tmp')]);
 */
export async function removeOrphanedTemporaryFiles(
  directories: string[],
  options: TemporaryFileSweepOptions = {},
): Promise<string[]> {
  const cutoffMs = (options.now ?? Date.now)() - (options.graceMs ?? DEFAULT_TEMPORARY_FILE_GRACE_MS);
  const removed: string[] = [];
  for (const directory of directories) {
    let names: string[];
    try {
      names = await readdir(directory);
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === 'ENOENT') continue;
      throw error;
    }
    for (const name of names) {
      const file = path.join(directory, name);
      const stats = await lstat(file).catch(() => undefined);
      if (!stats?.isFile() || !isOrphan(name, stats.mtimeMs, cutoffMs)) continue;
      await rm(file, { force: true });
      removed.push(file);
    }
  }
  return removed;
}
