import { stat } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Config } from '../../src/config.js';
import { sqliteFiles } from '../../src/db/database.js';
import { type BenchService, serveBenchService } from './bench-service.js';

/** What `GET /__bench/stats` answers (see `bench/servers/mordn-probed.ts`). */
export interface ProbedStats {
  /** Event-loop delay since the last `POST /__bench/reset` (ms). */
  eventLoop: { p50: number; p99: number; max: number; mean: number };
  /** `process.memoryUsage()` after a forced collection when asked (`?gc=1`, needs `--expose-gc`). */
  heapUsedBytes: number;
  rssBytes: number;
  /** The SQLite database and its WAL, shared-memory and journal files (bytes). */
  databaseBytes: number;
  /** Rows in `workspaces`. */
  workspaces: number;
  dataDir: string;
}

/**
 * The service as `bench/servers/mordn.ts` serves it (`serveBenchService`), plus two bench-only
 * routes in front of the app that no product build has: `GET /__bench/stats[?gc=1]` (event-loop
 * delay, heap after a forced GC, database size, workspace rows) and `POST /__bench/reset`
 * (restarts the event-loop delay histogram). Prints `{"port":…}`.
 */
const RESOLUTION_MS = 10;
const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
delay.enable();

async function databaseBytes(config: Config): Promise<number> {
  if (config.database.kind !== 'sqlite') return Number.NaN;
  const sizes = await Promise.all(
    sqliteFiles(config.database.file).map((file) =>
      stat(file).then(
        (found) => found.size,
        () => 0,
      ),
    ),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}

async function stats({ config, deps, dataDir }: BenchService, collect: boolean): Promise<ProbedStats> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (collect) {
    if (!gc) throw new Error('start this server with --expose-gc');
    gc();
  }
  const memory = process.memoryUsage();
  const rows = await deps.database.db
    .selectFrom('workspaces')
    .select((query) => query.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  // Node 20 records each whole timer interval, the resolution included: the delay is what exceeds it.
  const ms = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS);
  return {
    eventLoop: {
      p50: ms(delay.percentile(50)),
      p99: ms(delay.percentile(99)),
      max: ms(delay.max),
      mean: ms(delay.mean),
    },
    heapUsedBytes: memory.heapUsed,
    rssBytes: memory.rss,
    databaseBytes: await databaseBytes(config),
    workspaces: Number(rows.count),
    dataDir,
  };
}

await serveBenchService((service) => async (request, env) => {
  const url = new URL(request.url);
  if (url.pathname === '/__bench/stats') return Response.json(await stats(service, url.searchParams.get('gc') === '1'));
  if (url.pathname === '/__bench/reset' && request.method === 'POST') {
    delay.reset();
    return new Response(null, { status: 204 });
  }
  return service.fetch(request, env);
});
