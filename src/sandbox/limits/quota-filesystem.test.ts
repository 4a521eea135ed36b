import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createQuotaFilesystems, QuotaUnavailableError } from './quota-filesystem.js';

describe('createQuotaFilesystems', () => {
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'mordn-quota-unit-'));
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('says in the probe that it needs root, before touching anything', async () => {
    vi.spyOn(process, 'getuid').mockReturnValue(1000);
    const quota = createQuotaFilesystems({
      directory: path.join(scratch, 'never-made'),
      maxBytes: 1024 ** 3,
      maxFiles: 65_536,
    });
    const probe = quota.probe();
    await expect(probe).rejects.toBeInstanceOf(QuotaUnavailableError);
    await expect(probe).rejects.toThrow(
      'per-workspace filesystems need root (loop devices, mount); the service runs as uid 1000',
    );
  });

  it('refuses workspace ids that could name something else', async () => {
    const quota = createQuotaFilesystems({ directory: scratch, maxBytes: 1024 ** 3, maxFiles: 65_536 });
    for (const id of ['', '.images', '../etc', 'ws/1', 'a'.repeat(65), 'ws.1']) {
      await expect(quota.ensure(id)).rejects.toThrow(TypeError);
      await expect(quota.remove(id)).rejects.toThrow(TypeError);
    }
  });

  it('refuses sizes it cannot lay out when made', () => {
    expect(() => createQuotaFilesystems({ directory: scratch, maxBytes: 1000, maxFiles: 10 })).toThrow(RangeError);
  });
});
