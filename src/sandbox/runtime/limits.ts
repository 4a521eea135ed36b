/**
 * What every sandboxed process is held to, whichever backend runs it (each backend documents how
 * it enforces them: bwrap with prlimit and a pids cgroup, docker with container settings).
 */
export interface ProcessLimits {
  /** Address space per process (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads of one sandbox. */
  processes: number;
  /** The largest file a process may write (RLIMIT_FSIZE). */
  fileSizeBytes: number;
  /** Open files per process (RLIMIT_NOFILE); the file helper may use `HELPER_OPEN_FILES`. */
  openFiles: number;
  /** Size of the sandbox's tmpfs `/tmp` (and, with bwrap, `/dev/shm`). */
  tmpBytes: number;
}

/** 2 GiB address space, 256 processes, 256 MiB files, 256 open files, 64 MiB of /tmp. */
export const DEFAULT_PROCESS_LIMITS: Readonly<ProcessLimits> = {
  memoryBytes: 2 * 1024 ** 3,
  processes: 256,
  fileSizeBytes: 256 * 1024 ** 2,
  openFiles: 256,
  tmpBytes: 64 * 1024 ** 2,
};

/** The file helper walks directories with one descriptor per level. */
export const HELPER_OPEN_FILES = 1024;

/**
 * The defaults overlaid with the overrides that are set. Every limit must be a positive integer,
 * except those named in `fractional`, which must be positive.
 */
export function resolveLimits<T extends object>(
  defaults: Readonly<T>,
  overrides: Partial<T> = {},
  fractional: ReadonlyArray<keyof T> = [],
): T {
  const given = Object.entries(overrides).filter(([, value]) => value !== undefined);
  const limits = { ...defaults, ...Object.fromEntries(given) } as T;
  for (const [name, value] of Object.entries(limits) as Array<[string, number]>) {
    const integer = !fractional.includes(name as keyof T);
    if (!(value > 0) || (integer && !Number.isSafeInteger(value))) {
      throw new TypeError(`limits.${name} must be a positive ${integer ? 'integer' : 'number'}.`);
    }
  }
  return limits;
}
