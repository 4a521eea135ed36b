import path from 'node:path';

/** One cgroup filesystem mount, as /proc/self/mountinfo describes it. */
export interface CgroupMount {
  /** Where the hierarchy is mounted, e.g. `/sys/fs/cgroup/memory`. */
  mountPoint: string;
  /** Which cgroup of the hierarchy the mount shows at its mount point (`/` unless it is a bind of a subtree). */
  root: string;
  version: 1 | 2;
  /** v1 only: the controllers this hierarchy carries (`cpu,cpuacct` co-mounts carry both). */
  controllers: string[];
}

/** `\040`-style escapes of /proc/self/mountinfo. */
function unescapeMountPath(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** v1 super options name the controllers, among `rw` and options such as `name=systemd` or `xattr`. */
function isControllerName(option: string): boolean {
  return option !== 'rw' && option !== 'ro' && !option.includes('=');
}

/**
 * The cgroup and cgroup2 mounts listed in a /proc/self/mountinfo text; every other mount is left out.
 *
 * @example
 * parseCgroupMounts('35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory');
 * // → [{ mountPoint: '/sys/fs/cgroup/memory', root: '/', version: 1, controllers: ['memory'] }]
 */
export function parseCgroupMounts(mountInfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountInfo.split('\n')) {
    const fields = line.split(' ');
    // Optional fields between the mount options and the `-` separator vary in number.
    const separator = fields.indexOf('-');
    const [root, mountPoint] = [fields[3], fields[4]];
    const [fsType, , superOptions = ''] = fields.slice(separator + 1);
    if (separator < 0 || !root || !mountPoint || (fsType !== 'cgroup' && fsType !== 'cgroup2')) continue;
    mounts.push({
      mountPoint: unescapeMountPath(mountPoint),
      root: unescapeMountPath(root),
      version: fsType === 'cgroup2' ? 2 : 1,
      controllers: fsType === 'cgroup' ? superOptions.split(',').filter(isControllerName) : [],
    });
  }
  return mounts;
}

/**
 * Our own cgroup path per hierarchy from a /proc/self/cgroup text: keyed by controller name for
 * v1 (one entry per co-mounted controller) and by `''` for the unified v2 hierarchy.
 *
 * @example
 * parseOwnCgroups('4:memory:/process_api/02dd\n2:cpu,cpuacct:/\n0::/').get('memory'); // → '/process_api/02dd'
 */
export function parseOwnCgroups(selfCgroup: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of selfCgroup.split('\n')) {
    const [, controllers, ...rest] = line.split(':');
    if (controllers === undefined || rest.length === 0) continue;
    // The path itself may contain colons.
    const cgroupPath = rest.join(':');
    for (const controller of controllers === '' ? [''] : controllers.split(',')) own.set(controller, cgroupPath);
  }
  return own;
}

/**
 * Whether `candidate` is `directory` or lies inside it, compared by path segments (so
 * `/sys/fs/cgroupx` is not inside `/sys/fs/cgroup`).
 */
export function isAtOrBelow(candidate: string, directory: string): boolean {
  const relative = path.relative(directory, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The host directory of cgroup `cgroupPath` inside `mount`, or undefined when the mount shows only
 * a subtree that does not contain it (a container's bind of its own cgroup, say).
 *
 * @example
 * directoryInMount({ mountPoint: '/sys/fs/cgroup/memory', root: '/', version: 1, controllers: ['memory'] }, '/a');
 * // → '/sys/fs/cgroup/memory/a'
 */
export function directoryInMount(mount: CgroupMount, cgroupPath: string): string | undefined {
  if (!isAtOrBelow(cgroupPath, mount.root)) return undefined;
  return path.join(mount.mountPoint, path.relative(mount.root, cgroupPath));
}
