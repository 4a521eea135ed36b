/** One line of /proc/self/mountinfo. */
export interface MountEntry {
  mountId: number;
  parentId: number;
  /** `major:minor` of the filesystem's device. */
  device: string;
  /** Which directory of the filesystem shows at the mount point: `/` unless it is a bind of a subtree. */
  root: string;
  mountPoint: string;
  fsType: string;
  /** What was mounted, e.g. `/dev/loop3`. */
  source: string;
}

/** `\040`-style escapes of /proc/self/mountinfo (space, tab, newline, backslash). */
function unescapeMountField(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * Every mount listed in a /proc/self/mountinfo text, in the kernel's order (a mount stacked on
 * top of another at the same mount point comes after it). Malformed lines are left out.
 *
 * @example
 * parseMountInfo('36 25 7:3 / /srv/ws/ws_1 rw,nosuid,nodev shared:1 - ext4 /dev/loop3 rw');
 * // → [{ mountId: 36, parentId: 25, device: '7:3', root: '/', mountPoint: '/srv/ws/ws_1', fsType: 'ext4', source: '/dev/loop3' }]
 */
export function parseMountInfo(mountInfo: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of mountInfo.split('\n')) {
    const fields = line.split(' ');
    // Optional fields (shared:N, master:N, …) between the options and the `-` vary in number.
    const separator = fields.indexOf('-', 6);
    const [mountId, parentId, device, root, mountPoint] = fields;
    const [fsType, source] = fields.slice(separator + 1);
    if (separator < 0 || !mountId || !parentId || !device || !root || !mountPoint || !fsType || source === undefined) {
      continue;
    }
    entries.push({
      mountId: Number(mountId),
      parentId: Number(parentId),
      device,
      root: unescapeMountField(root),
      mountPoint: unescapeMountField(mountPoint),
      fsType,
      source: unescapeMountField(source),
    });
  }
  return entries;
}

/**
 * The mounts at exactly `mountPoint` (an absolute path without symlinks, as the kernel lists
 * it), bottom first; the last one is what a lookup of the path reaches. Empty when nothing is
 * mounted there.
 *
 * @example
 * const top = mountsAt(await readFile('/proc/self/mountinfo', 'utf8'), '/srv/ws/ws_1').at(-1);
 */
export function mountsAt(mountInfo: string, mountPoint: string): MountEntry[] {
  return parseMountInfo(mountInfo).filter((entry) => entry.mountPoint === mountPoint);
}

/**
 * The loop device's name (`loop3`) when `source` is a loop device node, else undefined.
 *
 * @example
 * loopDeviceName('/dev/loop3'); // → 'loop3'
 */
export function loopDeviceName(source: string): string | undefined {
  return /^\/dev\/(loop\d+)$/.exec(source)?.[1];
}
