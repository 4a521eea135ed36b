import { access, mkdir, readFile, writeFile } from 'node:fs/promises';

/** The errno name of a failed system call (`EACCES`, `EBUSY`, …), or undefined for other errors. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** An error naming what failed, keeping the errno as `code` so callers can still branch on it. */
function failure(message: string, error: unknown): Error {
  const reason = errorCode(error) ?? (error instanceof Error ? error.message : String(error));
  return Object.assign(new Error(`${message}: ${reason}`, { cause: error }), { code: errorCode(error) });
}

/**
 * Writes one value to a cgroup control file. A failure names the file, the value and the errno,
 * because the kernel's own answer (`EINVAL`, `EBUSY`) says nothing without them.
 *
 * @example
 * await writeControlFile('/sys/fs/cgroup/mordn/ws_1/pids.max', '64');
 */
export async function writeControlFile(file: string, value: string): Promise<void> {
  try {
    await writeFile(file, value);
  } catch (error) {
    throw failure(`cannot write "${value}" to ${file}`, error);
  }
}

/**
 * Reads a cgroup control file whole; a failure names the file and the errno.
 *
 * @example
 * const controllers = await readControlFile('/sys/fs/cgroup/cgroup.controllers'); // 'cpu memory pids\n'
 */
export async function readControlFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw failure(`cannot read ${file}`, error);
  }
}

/**
 * The `key value` lines of a flat-keyed file (cpu.stat, memory.events, memory.oom_control) as numbers.
 *
 * @example
 * (await readKeyedNumbers('/sys/fs/cgroup/mordn/ws_1/memory.events')).get('oom_kill'); // → 2
 */
export async function readKeyedNumbers(file: string): Promise<Map<string, number>> {
  const values = new Map<string, number>();
  for (const line of (await readControlFile(file)).split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) values.set(key, Number(value));
  }
  return values;
}

/**
 * The single number a file such as memory.current or memory.usage_in_bytes holds.
 *
 * @example
 * await readNumber('/sys/fs/cgroup/mordn/ws_1/memory.current'); // → 4096000
 */
export async function readNumber(file: string): Promise<number> {
  const text = (await readControlFile(file)).trim();
  if (!/^\d+$/.test(text)) throw new Error(`${file} holds "${text}", not a number`);
  return Number(text);
}

/**
 * The pids in a cgroup.procs file.
 *
 * @example
 * await readProcesses('/sys/fs/cgroup/mordn/ws_1/cgroup.procs'); // → [4242, 4250]
 */
export async function readProcesses(file: string): Promise<number[]> {
  return (await readControlFile(file)).split('\n').filter(Boolean).map(Number);
}

/**
 * Whether a control file exists; optional ones (memory.memsw.*, memory.swap.max, cgroup.kill)
 * depend on the kernel's build and boot options.
 *
 * @example
 * if (await fileExists(`${directory}/cgroup.kill`)) await writeControlFile(`${directory}/cgroup.kill`, '1');
 */
export async function fileExists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/**
 * Creates one cgroup directory; true when it was made now, false when it already existed (left by
 * an earlier run, and adopted). Other failures name the directory and the errno.
 *
 * @example
 * const created = await makeCgroupDirectory('/sys/fs/cgroup/mordn/ws_1');
 */
export async function makeCgroupDirectory(directory: string): Promise<boolean> {
  try {
    await mkdir(directory);
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw failure(`cannot create ${directory}`, error);
  }
}
