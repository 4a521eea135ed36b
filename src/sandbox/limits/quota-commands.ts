import { execFile } from 'node:child_process';
import { INODE_BYTES, type QuotaLayout } from './quota-layout.js';

/** Where an external tool comes from, for the message when it is missing. */
const PACKAGES: Record<string, string> = {
  'mkfs.ext4': 'e2fsprogs',
  e2fsck: 'e2fsprogs',
  resize2fs: 'e2fsprogs',
  mount: 'util-linux',
  umount: 'util-linux',
  losetup: 'util-linux',
  flock: 'util-linux',
  cp: 'coreutils',
  rm: 'coreutils',
};

/**
 * An external tool failed: its own words (stderr) are in the message.
 *
 * @example
 * const full = error instanceof CommandError && error.stderr.includes('No space left on device');
 */
export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    message: string,
    readonly tool: string,
    readonly exitCode: number | undefined,
    readonly stderr: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The tool is not installed (or not on PATH). */
  get missing(): boolean {
    return this.exitCode === undefined && (this.cause as { code?: unknown } | undefined)?.code === 'ENOENT';
  }
}

/**
 * Runs `tool` without a shell and resolves with its stdout; rejects with a `CommandError` that
 * quotes its stderr when it fails, is missing or outlives `timeoutMs` (it is then killed).
 *
 * @example
 * await runCommand('umount', ['/srv/mordn/workspaces/ws_1'], { timeoutMs: 30_000 });
 */
export function runCommand(tool: string, args: string[], options: { timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      tool,
      args,
      { timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) {
          resolve(stdout);
          return;
        }
        const detail = stderr.trim() || stdout.trim();
        const code = (error as { code?: unknown }).code;
        const exitCode = typeof code === 'number' ? code : undefined;
        let message: string;
        if (code === 'ENOENT')
          message = `${tool} is not installed (${PACKAGES[tool] ?? 'its package'}), or not on PATH`;
        else if ((error as { killed?: boolean }).killed)
          message = `${tool} did not finish within ${options.timeoutMs / 1000} s`;
        else message = `${tool} ${args.join(' ')} failed${exitCode === undefined ? '' : ` (exit ${exitCode})`}`;
        reject(new CommandError(detail ? `${message}: ${detail}` : message, tool, exitCode, detail, { cause: error }));
      },
    );
  });
}

/** Features of every workspace filesystem, named in full so that no host's mke2fs.conf changes them. */
const FEATURES = [
  'has_journal',
  'ext_attr',
  'dir_index',
  'filetype',
  'extent',
  '64bit',
  'flex_bg',
  'sparse_super',
  'large_file',
  'huge_file',
  'dir_nlink',
  'extra_isize',
  'metadata_csum',
];

/**
 * mke2fs arguments that make exactly `layout` in `image` (whose size must be `layout.imageBytes`).
 *
 * - `-O none,…`: the features above and nothing else. No resize_inode: its reserved descriptor
 *   blocks would cost 0.25 % of the quota for growth beyond 1024×, and ext4 grows without it.
 *   No inline_data: little to gain where every file costs an inode anyway, and long a source of bugs.
 * - `-m 0`: no root reserve; the service never writes into workspaces as root.
 * - `-J size`: a small journal (see the layout) instead of none, so a host crash costs no fsck
 *   (below 4 MiB of quota there is room for none).
 * - `lazy_itable_init`, `lazy_journal_init`, `nodiscard`: write nothing the sparse image already
 *   reads as zeros, so a fresh image takes a few hundred KiB on the host and mkfs takes milliseconds.
 *
 * @example
 * await runCommand('mkfs.ext4', mkfsArguments(image, planQuotaLayout(maxBytes, maxFiles), { uid: 65534, gid: 65534 }), { timeoutMs: 120_000 });
 */
export function mkfsArguments(image: string, layout: QuotaLayout, owner: { uid: number; gid: number }): string[] {
  return [
    '-q',
    '-F',
    ...['-b', '4096'],
    ...['-I', String(INODE_BYTES)],
    ...['-N', String(layout.inodes)],
    ...['-g', String(layout.blocksPerGroup)],
    ...['-G', '16'],
    ...['-m', '0'],
    ...(layout.journalBlocks > 0 ? ['-J', `size=${(layout.journalBlocks * 4096) / (1024 * 1024)}`] : []),
    ...[
      '-O',
      `none,${(layout.journalBlocks > 0 ? FEATURES : FEATURES.filter((name) => name !== 'has_journal')).join(',')}`,
    ],
    ...['-E', `lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=${owner.uid}:${owner.gid}`],
    image,
    String(layout.blocks),
  ];
}

/**
 * Mount options of every workspace filesystem (`mount -t ext4 -o MOUNT_OPTIONS image mountPoint`). `loop` makes util-linux attach a loop device with
 * autoclear (freed by the last unmount) and reuse the one already attached to the same image, so
 * one image never gets two devices. `nosuid,nodev`: nothing made inside gains privileges on the
 * host. `noinit_itable`: no kernel thread zeroes the inode tables, which would allocate them on the
 * host; the sparse image reads as zeros anyway. `discard`: deleted files are punched out of the
 * image, so host allocation follows what the workspace holds now, not the most it ever held.
 * Delayed allocation stays on: it reserves metadata for dirty pages pessimistically, so on a
 * loaded host a write can meet ENOSPC about a megabyte early until writeback catches up (a
 * `sync` frees the reservation); turning it off cost a fifth of a 5 MiB quota.
 */
export const MOUNT_OPTIONS = 'loop,nosuid,nodev,noinit_itable,discard';
