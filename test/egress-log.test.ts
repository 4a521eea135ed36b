import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createEgressLog, sweepEgressLog } from '../src/sandbox/egress/egress-log.js';
import { addEgressBytes, egressBytesOfDay } from '../src/sandbox/egress/egress-usage.js';
import { utcDay } from '../src/utc-days.js';
import { createTestDatabase, type TestDatabaseTarget } from './support/database.js';

const DAY = 24 * 60 * 60 * 1000;
const owner = { tenantId: 'ten_a', agentId: 'agt_a', userId: 'alice', workspaceId: 'ws_a' };

let database: Database & { target: TestDatabaseTarget };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.close();
  await database.target.destroy();
});

const refusal = (host: string, at: number) => ({
  owner,
  at,
  host,
  port: 443,
  address: null,
  decision: 'refused' as const,
  reason: 'policy' as const,
  bytesUp: 0,
  bytesDown: 0,
  durationMs: 0,
});

describe('the egress log', () => {
  it('collapses identical refusals within 10 s into one counted row, and starts a new row after', async () => {
    let now = Date.now();
    const log = createEgressLog(database.db, () => now);
    for (let index = 0; index < 5; index += 1) await log.record(refusal('loop.example', now));
    await log.record(refusal('other.example', now));
    now += 10_001;
    await log.record(refusal('loop.example', now));
    const rows = await database.db
      .selectFrom('egress_log')
      .select(['host', 'count'])
      .where('workspace_id', '=', 'ws_a')
      .orderBy('at')
      .orderBy('host')
      .execute();
    expect(rows.map((row) => ({ host: row.host, count: Number(row.count) }))).toEqual([
      { host: 'loop.example', count: 5 },
      { host: 'other.example', count: 1 },
      { host: 'loop.example', count: 1 },
    ]);
  });

  it('sweeps decisions past their retention and old daily counts, keeping the rest; 0 keeps all', async () => {
    const now = Date.UTC(2026, 11, 3, 12);
    const log = createEgressLog(database.db, () => now);
    await log.record({ ...refusal('old.example', now - 31 * DAY), owner: { ...owner, workspaceId: 'ws_sweep' } });
    await log.record({ ...refusal('new.example', now - DAY), owner: { ...owner, workspaceId: 'ws_sweep' } });
    await addEgressBytes(database.db, 'ws_sweep', 100, now - 40 * DAY);
    await addEgressBytes(database.db, 'ws_sweep', 200, now);
    expect(await sweepEgressLog(database.db, 0, now)).toBe(0);
    expect(await sweepEgressLog(database.db, 30, now)).toBe(1);
    const hosts = await database.db
      .selectFrom('egress_log')
      .select('host')
      .where('workspace_id', '=', 'ws_sweep')
      .execute();
    expect(hosts).toEqual([{ host: 'new.example' }]);
    const days = await database.db
      .selectFrom('egress_usage')
      .select('day')
      .where('workspace_id', '=', 'ws_sweep')
      .execute();
    expect(days).toEqual([{ day: utcDay(now) }]);
  });

  it('adds a workspace’s bytes of a UTC day in the database, from several writers at once', async () => {
    const at = Date.UTC(2026, 11, 3, 23, 59);
    await Promise.all(Array.from({ length: 20 }, () => addEgressBytes(database.db, 'ws_sum', 1000, at)));
    expect(await egressBytesOfDay(database.db, 'ws_sum', at)).toBe(20_000);
    // The next UTC day starts afresh.
    expect(await egressBytesOfDay(database.db, 'ws_sum', at + 2 * 60_000)).toBe(0);
  });
});
