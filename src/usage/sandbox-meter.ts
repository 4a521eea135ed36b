import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { runPeriodically } from '../periodic.js';
import type { SandboxBackend, WorkspaceResources } from '../sandbox/backend.js';
import type { UsageOwner, UsageSink } from './usage-types.js';

const GIB = 1024 ** 3;
const SECONDS_PER_HOUR = 3600;
/** Compare-and-swap attempts of one CPU reading before it is left to the next one. */
const CPU_BILL_ATTEMPTS = 5;

export interface SandboxMeterOptions {
  db: Kysely<DatabaseSchema>;
  /** Where readings come from: `resources` and `runningWorkspaces` (a backend without them bills nothing). */
  backend: Pick<SandboxBackend, 'resources' | 'runningWorkspaces'>;
  sink: UsageSink;
  logger: Logger;
  /** Length of one sampling interval of memory and disk (`MORDN_USAGE_SAMPLE_SECONDS`). */
  sampleSeconds: number;
  /**
   * After a call, the workspace is read again only once this long has passed since its last
   * reading after a call (default 0: every call). Nothing is lost meanwhile: the counter goes on,
   * and the next reading (a later call, the sampler, the last reading before a stop) bills it.
   */
  callReadingIntervalMs?: number;
  now?: () => number;
}

/** What one `sample` billed, for tests and logs. */
export interface SampleOutcome {
  /** Workspaces whose memory interval this call billed. */
  memory: number;
  /** Workspaces whose disk interval this call billed. */
  disk: number;
}

/**
 * Turns the cumulative readings of workspace sandboxes into usage deltas, exactly once across
 * replicas: the last reading billed lives in the workspace's row, and only the replica whose
 * compare-and-swap moves it adds the difference to the sink.
 */
export interface SandboxMeter {
  /** Bills the workspace's CPU since its last billed reading, off the caller's path (never throws). */
  afterCall(workspaceId: string): void;
  /** Bills one reading's CPU (the backend's last reading before a stop comes here); never rejects. */
  billReading(workspaceId: string, resources: WorkspaceResources): Promise<void>;
  /**
   * Samples now: for each running sandbox its CPU, and its memory × one interval (GiB-seconds);
   * for every workspace its recorded bytes × one interval (GiB-hours). Each interval of each
   * workspace is billed by one replica only.
   */
  sample(): Promise<SampleOutcome>;
  /** Runs `sample` every interval, without keeping the process alive; returns the stop. */
  start(): () => void;
  /** Settles once every billing `afterCall` started has. */
  flush(): Promise<void>;
}

/**
 * The meter of a sandbox runtime.
 *
 * CPU is billed from the sandbox's own cumulative counter (its cgroup or container), so the
 * processes a command left running count at the next reading. A reading of a new instance (the
 * sandbox was made again, its counter back at 0) is billed from 0; one of an older instance, or
 * lower than what was billed of the same one, is stale and bills nothing.
 *
 * @example
 * const meter = createSandboxMeter({ db, backend, sink, logger, sampleSeconds: 60 });
 * const stop = meter.start();
 * meter.afterCall(workspace.id); // after each sandbox tool call
 */
export function createSandboxMeter(options: SandboxMeterOptions): SandboxMeter {
  const { db, backend, sink, logger } = options;
  const now = options.now ?? Date.now;
  const intervalMs = options.sampleSeconds * 1000;
  const pending = new Set<Promise<void>>();
  /** When each workspace was last read after a call, by this process. */
  const readAfterCall = new Map<string, number>();
  const callReadingIntervalMs = options.callReadingIntervalMs ?? 0;

  const billCpu = async (workspaceId: string, reading: WorkspaceResources): Promise<void> => {
    const micros = Math.round(reading.cpuSeconds * 1e6);
    for (let attempt = 0; attempt < CPU_BILL_ATTEMPTS; attempt += 1) {
      const row = await db
        .selectFrom('workspaces')
        .select(['tenant_id', 'agent_id', 'user_id', 'meter_instance', 'meter_started_at', 'meter_cpu_micros'])
        .where('id', '=', workspaceId)
        .executeTakeFirst();
      if (!row) return;
      const billed = Number(row.meter_cpu_micros);
      const sameInstance = row.meter_instance === reading.instance;
      if (sameInstance ? micros <= billed : reading.startedAt < Number(row.meter_started_at)) return;
      const from = sameInstance ? billed : 0;
      const result = await db
        .updateTable('workspaces')
        .set({ meter_instance: reading.instance, meter_started_at: reading.startedAt, meter_cpu_micros: micros })
        .where('id', '=', workspaceId)
        .where('meter_instance', row.meter_instance === null ? 'is' : '=', row.meter_instance)
        .where('meter_cpu_micros', '=', row.meter_cpu_micros)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) {
        sink.add(ownerOf(row), { sandboxCpuSeconds: (micros - from) / 1e6 }, now());
        return;
      }
      // Another replica billed a reading meanwhile: compare against what it stored.
    }
  };

  const billReading = (workspaceId: string, resources: WorkspaceResources) =>
    billCpu(workspaceId, resources).catch((error: unknown) =>
      logger.warn({ workspaceId, err: error }, 'sandbox CPU not metered'),
    );

  /** Claims the workspace's memory interval starting at `slot`; its owner when this replica won it. */
  const claimMemory = async (workspaceId: string, slot: number) =>
    db
      .updateTable('workspaces')
      .set({ meter_memory_sampled_at: slot })
      .where('id', '=', workspaceId)
      .where('meter_memory_sampled_at', '<', slot)
      .returning(['tenant_id', 'agent_id', 'user_id'])
      .executeTakeFirst();

  const sampleRunning = async (slot: number, at: number): Promise<number> => {
    let billed = 0;
    for (const workspaceId of (await backend.runningWorkspaces?.()) ?? []) {
      const reading = await backend.resources?.(workspaceId).catch(() => undefined);
      if (!reading) continue;
      await billReading(workspaceId, reading);
      const owner = await claimMemory(workspaceId, slot);
      if (!owner) continue;
      sink.add(ownerOf(owner), { sandboxMemoryGibSeconds: (reading.memoryBytes / GIB) * options.sampleSeconds }, at);
      billed += 1;
    }
    return billed;
  };

  /** Claims every workspace's disk interval at once; each row is updated (and billed) by one replica. */
  const sampleDisk = async (slot: number, at: number): Promise<number> => {
    const claimed = await db
      .updateTable('workspaces')
      .set({ meter_disk_sampled_at: slot })
      .where('meter_disk_sampled_at', '<', slot)
      .returning(['tenant_id', 'agent_id', 'user_id', 'bytes'])
      .execute();
    const hours = options.sampleSeconds / SECONDS_PER_HOUR;
    for (const row of claimed) {
      const bytes = Number(row.bytes);
      if (bytes > 0) sink.add(ownerOf(row), { diskGibHours: (bytes / GIB) * hours }, at);
    }
    return claimed.length;
  };

  const sample = async (): Promise<SampleOutcome> => {
    const at = now();
    // Intervals are aligned to the clock, so every replica names the same one.
    const slot = Math.floor(at / intervalMs) * intervalMs;
    const memory = await sampleRunning(slot, at);
    const disk = await sampleDisk(slot, at);
    return { memory, disk };
  };

  return {
    afterCall(workspaceId) {
      const at = now();
      if (at - (readAfterCall.get(workspaceId) ?? Number.NEGATIVE_INFINITY) < callReadingIntervalMs) return;
      readAfterCall.set(workspaceId, at);
      if (readAfterCall.size > 10_000) readAfterCall.clear();
      const billing = (async () => {
        const reading = await backend.resources?.(workspaceId);
        if (reading) await billReading(workspaceId, reading);
      })()
        .catch((error: unknown) => logger.warn({ workspaceId, err: error }, 'sandbox usage not read'))
        .finally(() => pending.delete(billing));
      pending.add(billing);
    },
    billReading,
    sample,
    start: () =>
      runPeriodically(sample, intervalMs, (error) => logger.error({ err: error }, 'sandbox usage sampling failed')),
    async flush() {
      await Promise.all([...pending]);
    },
  };
}

function ownerOf(row: { tenant_id: string; agent_id: string; user_id: string }): UsageOwner {
  return { tenantId: row.tenant_id, agentId: row.agent_id, userId: row.user_id };
}
