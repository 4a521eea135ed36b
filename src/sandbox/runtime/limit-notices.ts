import type { ExecResult } from '../backend.js';
import type { QuotaFilesystems } from '../limits/quota-filesystem.js';

const SIGKILL = 9;

/**
 * Whether the command died of SIGKILL (a shell reports its child's as 128 + SIGKILL) on its own,
 * not at a timeout or abort: the only ends the OOM killer can have caused.
 */
function mayBeOomKill(result: ExecResult, signal: number | undefined): boolean {
  return (signal === SIGKILL || result.exitCode === 128 + SIGKILL) && !result.timedOut && !result.aborted;
}

function formatBytes(bytes: number): string {
  return bytes % 1024 ** 3 === 0 ? `${bytes / 1024 ** 3} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}

/**
 * The result marked `outOfMemory` when the kernel's OOM killer killed something in the workspace
 * during the call (`oomKillsAfter > oomKillsBefore`) and what it killed was this command or one
 * of its children (a shell then exits 128 + SIGKILL). A timed-out or aborted call keeps its result.
 *
 * @example
 * return outOfMemoryNotice(result, { signal: exit.signal, oomKillsBefore, oomKillsAfter, memoryBytes });
 */
export function outOfMemoryNotice(
  result: ExecResult,
  facts: { signal: number | undefined; oomKillsBefore: number; oomKillsAfter: number; memoryBytes: number },
): ExecResult {
  if (!mayBeOomKill(result, facts.signal) || facts.oomKillsAfter <= facts.oomKillsBefore) return result;
  return {
    ...result,
    outOfMemory: true,
    message: `OUT_OF_MEMORY: the command was killed because the workspace's processes together reached its memory limit of ${formatBytes(facts.memoryBytes)}.`,
  };
}

/** The result marked `quotaReached` when the workspace's filesystem is full, in bytes or in files. */
export function quotaNotice(
  result: ExecResult,
  usage: { bytes: number; files: number; maxBytes: number; maxFiles: number } | undefined,
  quota: { maxBytes: number; maxFiles: number },
): ExecResult {
  if (!usage || (usage.bytes < usage.maxBytes * 0.99 && usage.files < usage.maxFiles)) return result;
  return {
    ...result,
    quotaReached: true,
    message: `WORKSPACE_QUOTA_REACHED: the workspace is full (at most ${formatBytes(quota.maxBytes)} and ${quota.maxFiles} files); writes fail with "No space left on device" until files are deleted.`,
  };
}

/**
 * Both notices for one finished call, as a backend gathers the facts: the OOM-kill counter of the
 * workspace's memory cgroup (read before the call, and now through `oomKills`) and the
 * workspace's filesystem. Either may be missing (weak limits, a daemon on another host).
 *
 * @example
 * return explainLimits(result, { signal, oomKillsBefore, oomKills: () => cgroup.oomKills(), memoryBytes, quota, quotaLimits, workspaceId });
 */
export async function explainLimits(
  result: ExecResult,
  facts: {
    workspaceId: string;
    signal: number | undefined;
    oomKillsBefore: number | undefined;
    oomKills: (() => Promise<number>) | undefined;
    memoryBytes: number;
    quota: QuotaFilesystems | undefined;
    quotaLimits: { maxBytes: number; maxFiles: number };
  },
): Promise<ExecResult> {
  const { oomKillsBefore, oomKills } = facts;
  // The counter is read again only for a command that was killed: no other can be the OOM killer's.
  if (oomKills && oomKillsBefore !== undefined && mayBeOomKill(result, facts.signal)) {
    const oomKillsAfter = await oomKills().catch(() => oomKillsBefore);
    const noticed = outOfMemoryNotice(result, { ...facts, oomKillsBefore, oomKillsAfter });
    if (noticed.outOfMemory) return noticed;
  }
  const usage = facts.quota ? await facts.quota.usage(facts.workspaceId).catch(() => undefined) : undefined;
  return quotaNotice(result, usage, facts.quotaLimits);
}
