import { describe, expect, it } from 'vitest';
import {
  allocationBound,
  BLOCK_BYTES,
  defaultMaxFiles,
  planGrowth,
  planQuotaLayout,
  reservedClustersFor,
} from './quota-layout.js';

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

describe('defaultMaxFiles', () => {
  it('is one file per 16 KiB of quota, at least 1024', () => {
    expect(defaultMaxFiles(GIB)).toBe(65_536);
    expect(defaultMaxFiles(64 * MIB)).toBe(4096);
    expect(defaultMaxFiles(5 * MIB)).toBe(1024);
    expect(defaultMaxFiles(1024 * GIB)).toBe(67_108_864);
  });
});

describe('planQuotaLayout', () => {
  // The figures of real filesystems made with these layouts (mke2fs 1.47, kernel 6.18).
  it.each([
    { maxBytes: 5 * MIB, maxFiles: 200, blocks: 2348, inodes: 208, files: 198, usable: 5 * MIB },
    { maxBytes: 64 * MIB, maxFiles: 4096, blocks: 17_797, inodes: 4096, files: 4086, usable: 64 * MIB },
    { maxBytes: GIB, maxFiles: 65_536, blocks: 267_048, inodes: 65_520, files: 65_510, usable: 1_072_218_112 },
  ])(
    'lays out $maxBytes bytes and $maxFiles files as mke2fs does',
    ({ maxBytes, maxFiles, blocks, inodes, files, usable }) => {
      const layout = planQuotaLayout(maxBytes, maxFiles);
      expect(layout).toMatchObject({ blocks, inodes, maxFiles: files, usableBytes: usable });
      expect(layout.imageBytes).toBe(blocks * BLOCK_BYTES);
      expect(layout.imageBytes).toBeLessThanOrEqual(allocationBound(maxBytes));
    },
  );

  it('keeps both promises from 1 MiB to 1 TiB with the default file count', () => {
    for (let maxBytes = MIB; maxBytes <= 1024 * GIB; maxBytes = Math.ceil(maxBytes * 1.37)) {
      const maxFiles = defaultMaxFiles(maxBytes);
      const layout = planQuotaLayout(maxBytes, maxFiles);
      expect(layout.usableBytes, `usable of ${maxBytes}`).toBeGreaterThanOrEqual(maxBytes * 0.99);
      expect(layout.imageBytes, `image of ${maxBytes}`).toBeLessThanOrEqual(allocationBound(maxBytes));
      expect(layout.maxFiles).toBeLessThanOrEqual(maxFiles);
      expect(layout.maxFiles).toBeGreaterThan(maxFiles - 16 * layout.groups);
    }
  });

  it('holds the whole quota where the allocation bound leaves room, and gives up at most 1 % where not', () => {
    expect(planQuotaLayout(64 * MIB, 4096).usableBytes).toBeGreaterThanOrEqual(64 * MIB);
    const tight = planQuotaLayout(400 * MIB, defaultMaxFiles(400 * MIB));
    expect(tight.usableBytes).toBeLessThan(400 * MIB);
    expect(tight.usableBytes).toBeGreaterThanOrEqual(400 * MIB * 0.99);
  });

  it('exceeds the allocation bound only by inode tables when the file count is far above the default', () => {
    const layout = planQuotaLayout(5 * MIB, 100_000);
    expect(layout.maxFiles).toBeLessThanOrEqual(100_000);
    expect(layout.usableBytes).toBeGreaterThanOrEqual(5 * MIB);
    expect(layout.imageBytes).toBeGreaterThan(allocationBound(5 * MIB));
    // 256 bytes per inode: what the host allocates once every one of them is in use.
    expect(layout.imageBytes - allocationBound(5 * MIB)).toBeLessThan(layout.inodes * 256);
  });

  it('makes no journal for quotas under 4 MiB, where mke2fs would not', () => {
    expect(planQuotaLayout(3 * MIB, 1024).journalBlocks).toBe(0);
    expect(planQuotaLayout(4 * MIB, 1024).journalBlocks).toBe(1024);
    expect(planQuotaLayout(GIB, 65_536).journalBlocks).toBe(1024);
    expect(planQuotaLayout(1024 * GIB, 1024).journalBlocks).toBe(16_384);
  });

  it('spreads blocks over equal groups, and adds groups for a file count one group cannot hold', () => {
    const layout = planQuotaLayout(GIB, 65_536);
    expect(layout.blocks).toBe(layout.groups * layout.blocksPerGroup);
    const crowded = planQuotaLayout(MIB, 1_000_000);
    expect(crowded.groups).toBe(31);
    expect(crowded.inodesPerGroup).toBeLessThanOrEqual(32_768);
  });

  it('offers at least 16 inodes per group, above a file count too small for that', () => {
    expect(planQuotaLayout(GIB, 10).maxFiles).toBe(9 * 16 - 10);
  });

  it('refuses sizes it cannot lay out', () => {
    expect(() => planQuotaLayout(1000, 10)).toThrow(RangeError);
    expect(() => planQuotaLayout(GIB, 0)).toThrow(RangeError);
    expect(() => planQuotaLayout(GIB, 1.5)).toThrow(RangeError);
  });
});

describe('planGrowth', () => {
  const small = planQuotaLayout(5 * MIB, 200);
  const geometry = {
    blocks: small.blocks,
    blocksPerGroup: small.blocksPerGroup,
    inodesPerGroup: small.inodesPerGroup,
    journalBlocks: small.journalBlocks,
  };

  it('grows a filesystem to hold a larger quota, within the allocation bound', () => {
    const blocks = planGrowth(64 * MIB, geometry);
    expect(blocks).toBeGreaterThan(small.blocks);
    expect((blocks ?? 0) * BLOCK_BYTES).toBeLessThanOrEqual(allocationBound(64 * MIB));
    expect((blocks ?? 0) * BLOCK_BYTES).toBeGreaterThan(64 * MIB);
  });

  it('leaves a filesystem that holds the quota already, and never shrinks one', () => {
    expect(planGrowth(5 * MIB, geometry)).toBeUndefined();
    expect(planGrowth(MIB, geometry)).toBeUndefined();
  });

  it('never leaves a last group too small for its own metadata', () => {
    const blocks = planGrowth(129 * MIB, geometry) ?? 0;
    const remainder = blocks % geometry.blocksPerGroup;
    expect(remainder === 0 || remainder > 2 + 13 + 50).toBe(true);
  });
});

describe('reservedClustersFor', () => {
  it('is ext4 own 2 %, capped at 128 clusters', () => {
    expect(reservedClustersFor(1000)).toBe(20);
    expect(reservedClustersFor(262_000)).toBe(128);
  });
});
