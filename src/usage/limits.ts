import type { Kysely, Selectable } from 'kysely';
import type { DatabaseSchema, UsageLimitsTable } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { nextUtcDay, nextUtcMonth, utcDay } from '../utc-days.js';

type Db = Kysely<DatabaseSchema>;

/** The limits of a tenant or an agent; null is unlimited, 0 refuses everything. */
export interface UsageLimits {
  tokensPerDay: number | null;
  tokensPerMonth: number | null;
  sandboxCpuSecondsPerDay: number | null;
  storageBytes: number | null;
}

export type LimitName = keyof UsageLimits;
export type LimitScope = 'tenant' | 'agent';

export const UNLIMITED: Readonly<UsageLimits> = Object.freeze({
  tokensPerDay: null,
  tokensPerMonth: null,
  sandboxCpuSecondsPerDay: null,
  storageBytes: null,
});

type LimitsRow = Selectable<UsageLimitsTable>;

function limitsOf(row: LimitsRow | undefined): UsageLimits {
  if (!row) return { ...UNLIMITED };
  const value = (column: number | string | null) => (column === null ? null : Number(column));
  return {
    tokensPerDay: value(row.tokens_per_day),
    tokensPerMonth: value(row.tokens_per_month),
    sandboxCpuSecondsPerDay: value(row.sandbox_cpu_seconds_per_day),
    storageBytes: value(row.storage_bytes),
  };
}

/** The limits stored for a tenant or an agent (all null when none were set). */
export async function readLimits(db: Db, scope: LimitScope, scopeId: string): Promise<UsageLimits> {
  const row = await db
    .selectFrom('usage_limits')
    .selectAll()
    .where('scope', '=', scope)
    .where('scope_id', '=', scopeId)
    .executeTakeFirst();
  return limitsOf(row);
}

/** Replaces the limits of a tenant or an agent (the caller checked that it exists). */
export async function writeLimits(
  db: Db,
  scope: LimitScope,
  scopeId: string,
  limits: UsageLimits,
  now: number,
): Promise<void> {
  const columns = {
    tokens_per_day: limits.tokensPerDay,
    tokens_per_month: limits.tokensPerMonth,
    sandbox_cpu_seconds_per_day: limits.sandboxCpuSecondsPerDay,
    storage_bytes: limits.storageBytes,
    updated_at: now,
  };
  await db
    .insertInto('usage_limits')
    .values({ scope, scope_id: scopeId, ...columns })
    .onConflict((conflict) => conflict.columns(['scope', 'scope_id']).doUpdateSet(columns))
    .execute();
}

/** Removes the limits of a tenant or an agent (with the tenant or agent itself). */
export async function deleteLimits(db: Db, scope: LimitScope, scopeId: string): Promise<void> {
  await db.deleteFrom('usage_limits').where('scope', '=', scope).where('scope_id', '=', scopeId).execute();
}

const LABELS: Record<LimitName, string> = {
  tokensPerDay: 'daily token limit',
  tokensPerMonth: 'monthly token limit',
  sandboxCpuSecondsPerDay: 'daily sandbox CPU limit',
  storageBytes: 'storage limit',
};

/**
 * The `LIMIT_REACHED` error of a limit: 429 with `resetAt` for a daily or monthly limit, 413 with
 * `resetAt: null` for storage (it frees only when files are deleted).
 */
export function limitReached(
  scope: LimitScope,
  limit: LimitName,
  figures: { value: number; used: number; resetAt: Date | null },
): ServiceError {
  const whose = scope === 'tenant' ? "This tenant's" : "This agent's";
  const when = figures.resetAt ? ` It resets at ${figures.resetAt.toISOString()}.` : ' Delete files to free space.';
  return new ServiceError(
    'LIMIT_REACHED',
    `${whose} ${LABELS[limit]} of ${figures.value} is reached (${figures.used} used).${when}`,
    {
      ...(figures.resetAt ? {} : { status: 413 }),
      fields: {
        limit,
        value: figures.value,
        used: figures.used,
        resetAt: figures.resetAt ? figures.resetAt.toISOString() : null,
      },
    },
  );
}

interface Scoped {
  tenantId: string;
  agentId: string;
}

/** The tenant's and the agent's limits (one read of both rows), each with how to sum its usage. */
async function bothScopes(db: Db, owner: Scoped) {
  const rows = await db
    .selectFrom('usage_limits')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([eb('scope', '=', 'tenant'), eb('scope_id', '=', owner.tenantId)]),
        eb.and([eb('scope', '=', 'agent'), eb('scope_id', '=', owner.agentId)]),
      ]),
    )
    .execute();
  const tenant = limitsOf(rows.find((row) => row.scope === 'tenant'));
  const agent = limitsOf(rows.find((row) => row.scope === 'agent'));
  return [
    { scope: 'tenant' as const, limits: tenant, column: 'tenant_id' as const, id: owner.tenantId },
    { scope: 'agent' as const, limits: agent, column: 'agent_id' as const, id: owner.agentId },
  ];
}

/** Tokens (input + output) of a tenant or an agent over the UTC days `[from, to]`. */
async function tokensUsed(db: Db, column: 'tenant_id' | 'agent_id', id: string, from: string, to: string) {
  const row = await db
    .selectFrom('usage_daily')
    .select((eb) => eb.fn.sum<number | string | null>(eb('input_tokens', '+', eb.ref('output_tokens'))).as('used'))
    .where(column, '=', id)
    .where('day', '>=', from)
    .where('day', '<=', to)
    .executeTakeFirst();
  return Number(row?.used ?? 0);
}

/**
 * Refuses a chat turn (throws `LIMIT_REACHED`, 429) when the tenant or the agent is at or over a
 * token limit of the day or the month. Checked as the turn starts: turns already running finish,
 * so the overshoot is at most what those turns use.
 */
export async function admitTurn(db: Db, owner: Scoped, now: number): Promise<void> {
  const today = utcDay(now);
  const monthStart = `${today.slice(0, 7)}-01`;
  for (const { scope, limits, column, id } of await bothScopes(db, owner)) {
    if (limits.tokensPerDay !== null) {
      const used = await tokensUsed(db, column, id, today, today);
      if (used >= limits.tokensPerDay) {
        throw limitReached(scope, 'tokensPerDay', { value: limits.tokensPerDay, used, resetAt: nextUtcDay(now) });
      }
    }
    if (limits.tokensPerMonth !== null) {
      const used = await tokensUsed(db, column, id, monthStart, today);
      if (used >= limits.tokensPerMonth) {
        throw limitReached(scope, 'tokensPerMonth', { value: limits.tokensPerMonth, used, resetAt: nextUtcMonth(now) });
      }
    }
  }
}

/**
 * The `LIMIT_REACHED` error (429) when the tenant or the agent is at or over its sandbox CPU
 * seconds of the day, else undefined. A call already running finishes.
 */
export async function sandboxCpuRefusal(db: Db, owner: Scoped, now: number): Promise<ServiceError | undefined> {
  const today = utcDay(now);
  for (const { scope, limits, column, id } of await bothScopes(db, owner)) {
    if (limits.sandboxCpuSecondsPerDay === null) continue;
    const row = await db
      .selectFrom('usage_daily')
      .select((eb) => eb.fn.sum<number | string | null>('sandbox_cpu_seconds').as('used'))
      .where(column, '=', id)
      .where('day', '=', today)
      .executeTakeFirst();
    const used = Number(row?.used ?? 0);
    if (used >= limits.sandboxCpuSecondsPerDay) {
      return limitReached(scope, 'sandboxCpuSecondsPerDay', {
        value: limits.sandboxCpuSecondsPerDay,
        used: Math.round(used * 1000) / 1000,
        resetAt: nextUtcDay(now),
      });
    }
  }
  return undefined;
}

/**
 * Refuses storing `bytes` more (throws `LIMIT_REACHED`, 413, `resetAt: null`) when the tenant's or
 * the agent's uploads and published files would then take more than its `storageBytes`.
 */
export async function admitStoredBytes(db: Db, owner: Scoped, bytes: number): Promise<void> {
  for (const { scope, limits, column, id } of await bothScopes(db, owner)) {
    if (limits.storageBytes === null) continue;
    const row = await db
      .selectFrom('stored_files')
      .select((eb) => eb.fn.sum<number | string | null>('size').as('used'))
      .where(column, '=', id)
      .executeTakeFirst();
    const used = Number(row?.used ?? 0);
    if (used + bytes > limits.storageBytes) {
      throw limitReached(scope, 'storageBytes', { value: limits.storageBytes, used, resetAt: null });
    }
  }
}
