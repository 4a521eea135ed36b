import type { Kysely } from 'kysely';
import type { EgressConfig } from '../../config.js';
import type { DatabaseSchema } from '../../db/schema.js';
import type { Logger } from '../../logger.js';
import type { TunnelStream } from '../supervisor/tunnel-stream.js';
import { type BandwidthLimiter, createBandwidthLimiter } from './bandwidth.js';
import type { RefusalReason } from './effective-policy.js';
import { addEgressBytes, egressBytesOfDay, untilNextUtcDay } from './egress-usage.js';
import type { RecentRefusal } from './refusals.js';

/** Bytes moved are added to the daily total at least this often (and when a connection closes). */
const COUNT_EVERY_BYTES = 1024 * 1024;
const SWEEP_INTERVAL_MS = 1_000;
/** Refusals remembered per workspace for exec notices. */
const RECENT_REFUSALS = 20;
const RECENT_REFUSAL_MS = 10 * 60_000;

/** One open connection of a workspace's code, as its workspace's counters see it. */
export interface OpenConnection {
  tunnel: TunnelStream;
  workspaceId: string;
  /** Bytes of this connection already added to the workspace's daily total. */
  counted: number;
}

/**
 * What the egress proxy keeps per workspace, across its connections: which are open (the
 * connection cap), one bandwidth pace for all of them, the bytes of the UTC day (added to the
 * database as they move, at least every MiB and when a connection closes; past the cap every open
 * connection is closed and the workspace is exhausted until the next UTC day), idle connections
 * (closed), and its recent refusals (for exec notices).
 */
export function createWorkspaceConnections(options: {
  db: Kysely<DatabaseSchema>;
  config: Pick<EgressConfig, 'maxConnections' | 'bytesPerDay' | 'bytesPerSecond' | 'idleSeconds'>;
  logger: Logger;
  /** Told of the bytes each count added to the workspace's daily total (for metering). */
  onCounted?: (workspaceId: string, bytes: number, at: number) => void;
}) {
  const { db, config, logger } = options;
  const open = new Map<string, Set<OpenConnection>>();
  const limiters = new Map<string, BandwidthLimiter>();
  /** Workspaces past their daily bytes, until the next UTC day (epoch ms). */
  const exhausted = new Map<string, number>();
  const recentRefusals = new Map<string, RecentRefusal[]>();

  const countBytes = async (connection: OpenConnection) => {
    const moved = connection.tunnel.bytesFromSandbox + connection.tunnel.bytesToSandbox;
    const delta = moved - connection.counted;
    if (delta <= 0) return;
    connection.counted = moved;
    const now = Date.now();
    const total = await addEgressBytes(db, connection.workspaceId, delta, now);
    options.onCounted?.(connection.workspaceId, delta, now);
    if (total >= config.bytesPerDay) {
      exhausted.set(connection.workspaceId, now + untilNextUtcDay(now));
      for (const other of open.get(connection.workspaceId) ?? []) other.tunnel.destroy();
    }
  };
  const countInBackground = (connection: OpenConnection) =>
    void countBytes(connection).catch((error: unknown) => logger.error({ err: error }, 'egress bytes not counted'));

  const sweep = setInterval(() => {
    const now = performance.now();
    for (const set of open.values()) {
      for (const connection of set) {
        const { tunnel } = connection;
        if (now - tunnel.lastActivity > config.idleSeconds * 1000) tunnel.destroy();
        else if (tunnel.bytesFromSandbox + tunnel.bytesToSandbox - connection.counted >= COUNT_EVERY_BYTES) {
          countInBackground(connection);
        }
      }
    }
    const cutoff = Date.now() - RECENT_REFUSAL_MS;
    for (const [workspaceId, list] of recentRefusals) {
      const kept = list.filter((refusal) => refusal.at >= cutoff);
      if (kept.length === 0) recentRefusals.delete(workspaceId);
      else recentRefusals.set(workspaceId, kept);
    }
  }, SWEEP_INTERVAL_MS);
  sweep.unref();

  return {
    /**
     * Counts a new connection of the workspace (paced with its others) until it closes, and says
     * whether it is beyond the connection cap.
     */
    open(workspaceId: string, tunnel: TunnelStream): { connection: OpenConnection; overCap: boolean } {
      const set = open.get(workspaceId) ?? new Set<OpenConnection>();
      open.set(workspaceId, set);
      let limiter = limiters.get(workspaceId);
      if (!limiter) {
        limiter = createBandwidthLimiter(config.bytesPerSecond);
        limiters.set(workspaceId, limiter);
      }
      tunnel.limiter = limiter;
      const connection: OpenConnection = { tunnel, workspaceId, counted: 0 };
      set.add(connection);
      tunnel.once('close', () => {
        set.delete(connection);
        if (set.size === 0 && open.get(workspaceId) === set) {
          open.delete(workspaceId);
          limiters.delete(workspaceId);
        }
        countInBackground(connection);
      });
      return { connection, overCap: set.size > config.maxConnections };
    },

    /** Whether the workspace has moved its bytes of the day (asking the database when unsure). */
    async exhausted(workspaceId: string): Promise<boolean> {
      const until = exhausted.get(workspaceId);
      if (until !== undefined && until > Date.now()) return true;
      return (await egressBytesOfDay(db, workspaceId, Date.now())) >= config.bytesPerDay;
    },

    /** Remembers a refusal for the next exec notice. */
    refused(workspaceId: string, target: string, reason: RefusalReason): void {
      const list = recentRefusals.get(workspaceId) ?? [];
      list.push({ at: Date.now(), target, reason });
      if (list.length > RECENT_REFUSALS) list.shift();
      recentRefusals.set(workspaceId, list);
    },

    refusalsSince(workspaceId: string, since: number): RecentRefusal[] {
      return (recentRefusals.get(workspaceId) ?? []).filter((refusal) => refusal.at >= since);
    },

    /** Closes every connection, counting what each moved. */
    async close(): Promise<void> {
      clearInterval(sweep);
      const all = [...open.values()].flatMap((set) => [...set]);
      for (const connection of all) connection.tunnel.destroy();
      await Promise.all(all.map((connection) => countBytes(connection).catch(() => undefined)));
    },
  };
}
