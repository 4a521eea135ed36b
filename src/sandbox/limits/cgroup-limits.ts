/** What one workspace's sandbox may use as a whole, all of its processes together. */
export interface CgroupLimits {
  /** Memory (RAM, and no swap on top) before the kernel's OOM killer picks a process inside. */
  memoryBytes: number;
  /** CPU time as a number of CPUs, fractional allowed: `0.5` is half of one CPU. */
  cpus: number;
  /** Processes and threads together; the caller adds whatever overhead its own helpers need. */
  processes: number;
}

/** The CFS period both versions are given; quotas are expressed against it. */
export const CPU_PERIOD_MICROS = 100_000;

/** The kernel refuses quotas below 1 ms. */
const MINIMUM_CPU_QUOTA_MICROS = 1_000;

const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The CFS quota (µs per `CPU_PERIOD_MICROS`) for `cpus` CPUs.
 *
 * @example
 * cpuQuotaMicros(0.5); // → 50000
 */
export function cpuQuotaMicros(cpus: number): number {
  return Math.max(MINIMUM_CPU_QUOTA_MICROS, Math.round(cpus * CPU_PERIOD_MICROS));
}

/**
 * Throws a TypeError naming the first limit that is not usable: memory and processes must be
 * positive integers, cpus a positive finite number.
 *
 * @example
 * assertValidLimits({ memoryBytes: 512 * 1024 ** 2, cpus: 0.5, processes: 256 });
 */
export function assertValidLimits(limits: CgroupLimits): void {
  for (const name of ['memoryBytes', 'processes'] as const) {
    if (!Number.isSafeInteger(limits[name]) || limits[name] <= 0) {
      throw new TypeError(`limits.${name} must be a positive integer.`);
    }
  }
  if (!Number.isFinite(limits.cpus) || limits.cpus <= 0) throw new TypeError('limits.cpus must be a positive number.');
}

/**
 * Throws a TypeError unless `name` is a workspace id fit to be a directory name
 * (`^[A-Za-z0-9_-]{1,64}$`), so no name can climb out of the parent cgroup or collide with the
 * `.probe-*` directories made at open time.
 *
 * @example
 * assertValidCgroupName('ws_0123abc');
 */
export function assertValidCgroupName(name: string): void {
  if (!NAME_PATTERN.test(name)) {
    throw new TypeError(`cgroup name ${JSON.stringify(name)} must match ${NAME_PATTERN.source}.`);
  }
}
