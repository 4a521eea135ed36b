import { describe, expect, it, vi } from 'vitest';
import type { ExecResult } from '../backend.js';
import { explainLimits } from './limit-notices.js';

const finished = (result: Partial<ExecResult>): ExecResult => ({
  exitCode: 0,
  stdout: '',
  stderr: '',
  truncated: false,
  timedOut: false,
  aborted: false,
  durationMs: 1,
  ...result,
});

const facts = (oomKills: () => Promise<number>, signal?: number) => ({
  workspaceId: 'ws_1',
  signal,
  oomKillsBefore: 2,
  oomKills,
  memoryBytes: 256 * 1024 ** 2,
  quota: undefined,
  quotaLimits: { maxBytes: 1024 ** 3, maxFiles: 1000 },
});

describe('explainLimits', () => {
  it('reads the OOM-kill counter again only after a command that was killed', async () => {
    const oomKills = vi.fn(async () => 3);
    expect(await explainLimits(finished({ exitCode: 0 }), facts(oomKills))).toEqual(finished({ exitCode: 0 }));
    expect(await explainLimits(finished({ exitCode: null, timedOut: true }), facts(oomKills, 9))).toMatchObject({
      timedOut: true,
    });
    expect(oomKills).not.toHaveBeenCalled();

    expect(await explainLimits(finished({ exitCode: 137 }), facts(oomKills))).toMatchObject({
      outOfMemory: true,
      message: expect.stringMatching(/^OUT_OF_MEMORY: .*256 MiB/),
    });
    expect(await explainLimits(finished({ exitCode: null }), facts(oomKills, 9))).toMatchObject({ outOfMemory: true });
    expect(oomKills).toHaveBeenCalledTimes(2);
  });

  it('leaves a killed command unmarked when the counter did not move', async () => {
    const result = await explainLimits(
      finished({ exitCode: 137 }),
      facts(async () => 2),
    );
    expect(result.outOfMemory).toBeUndefined();
  });
});
