import type { FilesystemGeometry } from './quota-layout.js';

/** The primary superblock starts 1 KiB into the filesystem and is 1 KiB long. */
export const SUPERBLOCK_OFFSET = 1024;
export const SUPERBLOCK_BYTES = 1024;
const EXT4_MAGIC = 0xef53;
const COMPAT_HAS_JOURNAL = 0x4;
const INCOMPAT_64BIT = 0x80;
/** `s_jnl_backup_type` saying that `s_jnl_blocks` holds a copy of the journal inode. */
const JOURNAL_BACKUP_BLOCKS = 1;

/** What the superblock of an ext4 filesystem says about its shape. */
export interface Ext4Superblock extends FilesystemGeometry {
  blockBytes: number;
  inodes: number;
}

/**
 * Reads the fields of an ext4 superblock (the 1 KiB at `SUPERBLOCK_OFFSET`) that sizing needs;
 * throws when `bytes` is not one.
 *
 * @example
 * const bytes = Buffer.alloc(SUPERBLOCK_BYTES);
 * await handle.read(bytes, 0, SUPERBLOCK_BYTES, SUPERBLOCK_OFFSET);
 * parseSuperblock(bytes).blocks; // → 2348
 */
export function parseSuperblock(bytes: Buffer): Ext4Superblock {
  if (bytes.length < SUPERBLOCK_BYTES || bytes.readUInt16LE(0x38) !== EXT4_MAGIC) {
    throw new Error('Not an ext4 filesystem: no superblock magic.');
  }
  const blockBytes = 1024 * 2 ** bytes.readUInt32LE(0x18);
  const compatible = bytes.readUInt32LE(0x5c);
  const incompatible = bytes.readUInt32LE(0x60);
  const highBlocks = incompatible & INCOMPAT_64BIT ? bytes.readUInt32LE(0x150) : 0;
  // s_jnl_blocks[15] and [16] (from 0x10c) back up the journal inode's i_size_high and i_size.
  const journalBytes =
    compatible & COMPAT_HAS_JOURNAL && bytes.readUInt8(0xfd) === JOURNAL_BACKUP_BLOCKS
      ? bytes.readUInt32LE(0x10c + 15 * 4) * 2 ** 32 + bytes.readUInt32LE(0x10c + 16 * 4)
      : 0;
  return {
    blockBytes,
    inodes: bytes.readUInt32LE(0x0),
    blocks: highBlocks * 2 ** 32 + bytes.readUInt32LE(0x4),
    blocksPerGroup: bytes.readUInt32LE(0x20),
    inodesPerGroup: bytes.readUInt32LE(0x28),
    journalBlocks: journalBytes / blockBytes,
  };
}
