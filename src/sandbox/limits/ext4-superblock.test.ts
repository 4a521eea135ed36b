import { describe, expect, it } from 'vitest';
import { parseSuperblock, SUPERBLOCK_BYTES } from './ext4-superblock.js';

/** A superblock as mke2fs writes it, with only the fields `parseSuperblock` reads. */
function superblock(fields: { blocks: number; journalBytes?: number; wide?: boolean }): Buffer {
  const bytes = Buffer.alloc(SUPERBLOCK_BYTES);
  bytes.writeUInt32LE(208, 0x0);
  bytes.writeUInt32LE(fields.blocks % 2 ** 32, 0x4);
  bytes.writeUInt32LE(2, 0x18); // 1024 << 2 = 4096-byte blocks
  bytes.writeUInt32LE(32_768, 0x20);
  bytes.writeUInt32LE(208, 0x28);
  bytes.writeUInt16LE(0xef53, 0x38);
  if (fields.journalBytes !== undefined) {
    bytes.writeUInt32LE(0x4, 0x5c);
    bytes.writeUInt8(1, 0xfd);
    bytes.writeUInt32LE(fields.journalBytes, 0x10c + 16 * 4);
  }
  if (fields.wide) {
    bytes.writeUInt32LE(0x80, 0x60);
    bytes.writeUInt32LE(Math.floor(fields.blocks / 2 ** 32), 0x150);
  }
  return bytes;
}

describe('parseSuperblock', () => {
  it('reads the geometry sizing needs', () => {
    expect(parseSuperblock(superblock({ blocks: 2348, journalBytes: 4 * 1024 ** 2 }))).toEqual({
      blockBytes: 4096,
      inodes: 208,
      blocks: 2348,
      blocksPerGroup: 32_768,
      inodesPerGroup: 208,
      journalBlocks: 1024,
    });
  });

  it('reads the high half of the block count of a 64-bit filesystem', () => {
    expect(parseSuperblock(superblock({ blocks: 2 ** 32 + 5, wide: true })).blocks).toBe(2 ** 32 + 5);
  });

  it('counts no journal blocks without a journal', () => {
    expect(parseSuperblock(superblock({ blocks: 330 })).journalBlocks).toBe(0);
  });

  it('refuses bytes that are not an ext4 superblock', () => {
    expect(() => parseSuperblock(Buffer.alloc(SUPERBLOCK_BYTES))).toThrow('Not an ext4 filesystem');
    expect(() => parseSuperblock(Buffer.alloc(16))).toThrow('Not an ext4 filesystem');
  });
});
