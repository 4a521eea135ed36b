/**
 * The sizing maths of a workspace's ext4 image: how many blocks, groups and inodes make a
 * filesystem whose usable bytes reach the quota while the host never allocates much more.
 *
 * The image is sparse, so the host allocates only what the filesystem has written. Everything
 * that is not data counts against one of the two promises: metadata is inside the image (so the
 * image must be larger than the quota by that much), and a block once written stays allocated on
 * the host until it is discarded. The layout is therefore exact rather than estimated: it mirrors
 * what mke2fs lays out for the options of `mkfsArguments` (4 KiB blocks, 256-byte inodes,
 * sparse_super, no resize inode, flex_bg), and the tests compare it with real filesystems.
 */

/** The default file count lives below the configuration, which needs it too. */
export { defaultMaxFiles } from '../../workspace-file-defaults.js';

export const BLOCK_BYTES = 4096;
/** 256, not 128: 128-byte inodes stop timestamps at 2038, keep no nanoseconds and hold no inline xattrs. */
export const INODE_BYTES = 256;
const INODES_PER_BLOCK = BLOCK_BYTES / INODE_BYTES;
/** One bitmap block covers a group's blocks, and one its inodes: 8 bits per byte. */
const MAX_BLOCKS_PER_GROUP = BLOCK_BYTES * 8;
const MAX_INODES_PER_GROUP = BLOCK_BYTES * 8;
/** Group descriptors are 64 bytes with the 64bit feature. */
const DESCRIPTOR_BYTES = 64;
/** Inodes 1–10 are ext4's own (the root directory is inode 2); the first file anyone makes is inode 11. */
export const RESERVED_INODES = 10;
/** The root directory's one block (lost+found is removed once the filesystem is mounted). */
const ROOT_DIRECTORY_BLOCKS = 1;
/** jbd2 refuses journals of fewer than 1024 blocks. */
const MIN_JOURNAL_MIB = 4;
const MAX_JOURNAL_MIB = 64;
/**
 * ext4 holds back 2 % of a filesystem (at most 4096 clusters) for allocations that must not fail
 * (splitting extents while converting unwritten ones, punching holes). They are one or two blocks
 * each, and one workspace runs a bounded number of processes, so 128 clusters (512 KiB) is ample;
 * the kernel's 16 MiB would otherwise be missing from every quota of 800 MiB or more.
 */
export const MAX_RESERVED_CLUSTERS = 128;
const MIB = 1024 * 1024;
const MAX_INODES = 2 ** 32 - 1;

/** Where each part of a workspace filesystem goes, and what it promises. */
export interface QuotaLayout {
  /** Total 4 KiB blocks of the image (its apparent size is `imageBytes`). */
  blocks: number;
  imageBytes: number;
  /** mke2fs `-g`: 32768 unless the file count asks for more, smaller groups. */
  blocksPerGroup: number;
  groups: number;
  inodesPerGroup: number;
  /** All inodes, ext4's own included: mke2fs `-N`. */
  inodes: number;
  /** Files and directories the workspace can hold: `inodes` less ext4's own. At most the requested count. */
  maxFiles: number;
  /** 0 for quotas under 4 MiB: no journal (see `journalBlocksFor`). */
  journalBlocks: number;
  /** What to write to /sys/fs/ext4/<device>/reserved_clusters after each mount. */
  reservedClusters: number;
  /** Blocks that never hold data: superblocks, group descriptors, bitmaps, inode tables, journal. */
  metadataBlocks: number;
  /** Bytes an unprivileged user can write into the fresh filesystem (its `df` available). */
  usableBytes: number;
  /** The promise on host allocation: quota + max(8 MiB, 2 % of the quota). */
  allocationBoundBytes: number;
}

/** What an existing filesystem is made of, as its superblock says. */
export interface FilesystemGeometry {
  blocks: number;
  blocksPerGroup: number;
  inodesPerGroup: number;
  journalBlocks: number;
}

/**
 * The promise on host allocation: `du` of the image stays at or below this, whatever runs inside.
 *
 * @example
 * allocationBound(5 * 1024 ** 2); // → 13 MiB (8 MiB of slack)
 * allocationBound(1024 ** 3); // → 1 GiB + 20.48 MiB (2 %)
 */
export function allocationBound(maxBytes: number): number {
  return maxBytes + Math.max(8 * MIB, Math.floor(maxBytes * 0.02));
}

/**
 * A journal of about 1/1024 of the quota in whole MiB: room for metadata bursts, little on the
 * host. None below 4 MiB of usable space: mke2fs makes no journal larger than half the free
 * blocks (and none at all under 2048 blocks), and the smallest jbd2 accepts is 4 MiB.
 */
function journalBlocksFor(maxBytes: number, usableBlocks: number): number {
  const mib = Math.min(MAX_JOURNAL_MIB, Math.max(MIN_JOURNAL_MIB, Math.ceil(maxBytes / 1024 / MIB)));
  const blocks = (mib * MIB) / BLOCK_BYTES;
  return usableBlocks >= blocks ? blocks : 0;
}

/** Groups 0 and 1 and the powers of 3, 5 and 7 hold superblock copies (sparse_super). */
function backupGroups(groups: number): number {
  const holders = new Set<number>([0, 1]);
  for (const base of [3, 5, 7]) {
    for (let power = base; power < groups; power *= base) holders.add(power);
  }
  return [...holders].filter((group) => group < groups).length;
}

function metadataBlocks(groups: number, inodesPerGroup: number, journalBlocks: number): number {
  const descriptorBlocks = Math.ceil((groups * DESCRIPTOR_BYTES) / BLOCK_BYTES);
  const superblocks = backupGroups(groups) * (1 + descriptorBlocks);
  const bitmapsAndTables = groups * (2 + Math.ceil(inodesPerGroup / INODES_PER_BLOCK));
  return superblocks + bitmapsAndTables + journalBlocks;
}

/**
 * The emergency reserve (clusters) of a filesystem with `dataBlocks` non-metadata blocks (statfs
 * `f_blocks`): the kernel's own 2 %, capped at `MAX_RESERVED_CLUSTERS`.
 *
 * @example
 * reservedClustersFor(262_000); // → 128
 */
export function reservedClustersFor(dataBlocks: number): number {
  return Math.min(MAX_RESERVED_CLUSTERS, Math.floor(dataBlocks / 50));
}

/** Blocks an unprivileged user can fill, given the blocks that are not metadata. */
function usableBlocksOf(dataBlocks: number): number {
  return dataBlocks - ROOT_DIRECTORY_BLOCKS - reservedClustersFor(dataBlocks);
}

/** The fewest non-metadata blocks that leave `usableBlocks` to the user (the reserve grows with them). */
function dataBlocksFor(usableBlocks: number): number {
  let dataBlocks = usableBlocks + ROOT_DIRECTORY_BLOCKS;
  while (usableBlocksOf(dataBlocks) < usableBlocks) dataBlocks += usableBlocks - usableBlocksOf(dataBlocks);
  return dataBlocks;
}

/**
 * The most inodes per group that keep the total at or below `inodeTarget`: whole inode-table
 * blocks (16 inodes), so mke2fs rounds nothing up. At least one block's worth per group.
 */
function inodesPerGroupFor(inodeTarget: number, groups: number): number {
  const perGroup = Math.floor(inodeTarget / groups / INODES_PER_BLOCK) * INODES_PER_BLOCK;
  return Math.min(MAX_INODES_PER_GROUP, Math.max(INODES_PER_BLOCK, perGroup));
}

function roundUp(value: number, multiple: number): number {
  return Math.ceil(value / multiple) * multiple;
}

function finish(
  maxBytes: number,
  shape: { blocks: number; blocksPerGroup: number; groups: number; inodesPerGroup: number; journalBlocks: number },
): QuotaLayout {
  const metadata = metadataBlocks(shape.groups, shape.inodesPerGroup, shape.journalBlocks);
  const dataBlocks = shape.blocks - metadata;
  const inodes = shape.groups * shape.inodesPerGroup;
  return {
    ...shape,
    imageBytes: shape.blocks * BLOCK_BYTES,
    inodes,
    maxFiles: inodes - RESERVED_INODES,
    reservedClusters: reservedClustersFor(dataBlocks),
    metadataBlocks: metadata,
    usableBytes: usableBlocksOf(dataBlocks) * BLOCK_BYTES,
    allocationBoundBytes: allocationBound(maxBytes),
  };
}

/** The smallest fresh filesystem leaving `usableBlocks` to the user with at most `maxFiles` files. */
function freshLayout(maxBytes: number, usableBlocks: number, maxFiles: number): QuotaLayout {
  const inodeTarget = Math.min(MAX_INODES, maxFiles + RESERVED_INODES);
  const journalBlocks = journalBlocksFor(maxBytes, usableBlocks);
  const dataBlocks = dataBlocksFor(usableBlocks);
  const minimumGroups = Math.ceil(inodeTarget / MAX_INODES_PER_GROUP);
  let groups = Math.max(1, minimumGroups);
  // More groups mean more bitmaps and descriptors, so the count settles within a few rounds.
  for (;;) {
    const inodesPerGroup = inodesPerGroupFor(inodeTarget, groups);
    const blocks = dataBlocks + metadataBlocks(groups, inodesPerGroup, journalBlocks);
    const needed = Math.max(minimumGroups, Math.ceil(blocks / MAX_BLOCKS_PER_GROUP));
    if (needed > groups) {
      groups = needed;
      continue;
    }
    if (groups === 1) {
      return finish(maxBytes, { blocks, blocksPerGroup: MAX_BLOCKS_PER_GROUP, groups, inodesPerGroup, journalBlocks });
    }
    // Equal groups: mke2fs drops a last group too small for its own metadata, taking usable blocks with it.
    const blocksPerGroup = roundUp(Math.ceil(blocks / groups), 8);
    return finish(maxBytes, { blocks: blocksPerGroup * groups, blocksPerGroup, groups, inodesPerGroup, journalBlocks });
  }
}

/**
 * Lowers the usable target, down to 1 % under the quota, while the image is larger than the
 * allocation bound (less a sixteenth of the slack, kept for the host's own extent blocks).
 */
function withinBound(maxBytes: number, layoutFor: (usableBlocks: number) => QuotaLayout): QuotaLayout {
  const quotaBlocks = Math.ceil(maxBytes / BLOCK_BYTES);
  const bound = allocationBound(maxBytes);
  const limitBlocks = Math.floor((bound - (bound - maxBytes) / 16) / BLOCK_BYTES);
  const floorBlocks = Math.ceil((maxBytes * 0.99) / BLOCK_BYTES) + 1;
  let target = quotaBlocks;
  let layout = layoutFor(target);
  while (layout.blocks > limitBlocks && target > floorBlocks) {
    target = Math.max(floorBlocks, target - (layout.blocks - limitBlocks));
    layout = layoutFor(target);
  }
  return layout;
}

function requireSizes(maxBytes: number, maxFiles: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < MIB) {
    throw new RangeError('maxBytes must be an integer of at least 1 MiB.');
  }
  if (!Number.isSafeInteger(maxFiles) || maxFiles < 1 || maxFiles > MAX_INODES - RESERVED_INODES) {
    throw new RangeError('maxFiles must be a positive integer below 2^32 - 10.');
  }
}

/**
 * The layout of a new workspace filesystem for `maxBytes` and `maxFiles`.
 *
 * Priorities, in order: at most `maxFiles` files; at least `maxBytes` usable while the image fits
 * the allocation bound; otherwise usable bytes go down to 1 % below the quota to keep within it;
 * and only when even that does not fit (a file count far above `defaultMaxFiles`) does the image
 * exceed the bound, by inode tables that the host allocates only as files are actually created.
 *
 * How close the file bound is: the inode count is a whole number of inode-table blocks (16
 * inodes) in every group, so `maxFiles` of the layout is at most the requested count and at most
 * 16 × groups − 1 below it (15 for a filesystem of one group, i.e. up to about 120 MiB). Each group
 * holds at least 16 inodes, so a file count under 16 per 128 MiB of quota cannot be honoured.
 *
 * @example
 * const layout = planQuotaLayout(64 * 1024 ** 2, 4096);
 * // layout.usableBytes ≥ 64 MiB, layout.imageBytes ≤ 72 MiB, layout.maxFiles === 4086
 */
export function planQuotaLayout(maxBytes: number, maxFiles: number): QuotaLayout {
  requireSizes(maxBytes, maxFiles);
  return withinBound(maxBytes, (usableBlocks) => freshLayout(maxBytes, usableBlocks, maxFiles));
}

/**
 * The block count to grow an existing filesystem to so that it holds `maxBytes`, or undefined
 * when it already does. Never smaller than now: ext4 filesystems are grown, never shrunk. New
 * groups get the filesystem's existing inodes per group, so growing raises its file count too.
 *
 * @example
 * const blocks = planGrowth(128 * 1024 ** 2, { blocks: 3584, blocksPerGroup: 32768, inodesPerGroup: 208, journalBlocks: 1024 });
 */
export function planGrowth(maxBytes: number, geometry: FilesystemGeometry): number | undefined {
  requireSizes(maxBytes, 1);
  const { blocksPerGroup, inodesPerGroup, journalBlocks } = geometry;
  const usableOf = (blocks: number) => {
    const groups = Math.ceil(blocks / blocksPerGroup);
    return usableBlocksOf(blocks - metadataBlocks(groups, inodesPerGroup, journalBlocks));
  };
  const layoutFor = (usableBlocks: number): QuotaLayout => {
    let blocks = Math.max(geometry.blocks, usableBlocks);
    while (usableOf(blocks) < usableBlocks) blocks += usableBlocks - usableOf(blocks);
    // resize2fs, like mke2fs, drops a last group too small for its metadata plus 50 blocks.
    const groups = Math.ceil(blocks / blocksPerGroup);
    const remainder = blocks % blocksPerGroup;
    const lastGroupMinimum =
      metadataBlocks(groups, inodesPerGroup, 0) - metadataBlocks(groups - 1, inodesPerGroup, 0) + 50;
    if (groups > 1 && remainder !== 0 && remainder < lastGroupMinimum) blocks += lastGroupMinimum - remainder;
    return finish(maxBytes, {
      blocks,
      blocksPerGroup,
      groups: Math.ceil(blocks / blocksPerGroup),
      inodesPerGroup,
      journalBlocks,
    });
  };
  const layout = withinBound(maxBytes, layoutFor);
  return layout.blocks > geometry.blocks ? layout.blocks : undefined;
}
