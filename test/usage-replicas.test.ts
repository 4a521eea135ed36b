import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { replicaAdmin, type ServiceReplica, startReplica } from './support/replica.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { adminRequest, agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';
import { chatBody, sseChunks } from './support/ui-stream.js';

/**
 * Metering and limits across two `mordn serve` processes on one PostgreSQL schema: concurrent
 * turns of one tenant on both add up exactly, and a limit, checked as each turn starts, is
 * overshot by at most the turns already running when it was reached.
 */

const TOKENS_PER_TURN = 100;

let model: ScriptedModelServer;
let target: TestDatabaseTarget;
let replicas: ServiceReplica[];

beforeAll(async () => {
  [model, target] = await Promise.all([
    // Slow enough that the turns sent together run together.
    startScriptedModelServer(() => ({
      text: 'Counted.',
      delayMs: 400,
      usage: { promptTokens: TOKENS_PER_TURN - 10, completionTokens: 10 },
    })),
    createTestDatabaseTarget(),
  ]);
  const environment = {
    ...target.environment,
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_SIGNING_SECRET: 'usage-replicas-signing-secret-0123456789',
    MORDN_MODEL: 'openai-compatible:scripted-1',
    MORDN_MODEL_BASE_URL: model.baseUrl,
  };
  replicas = await Promise.all([startReplica(environment), startReplica(environment)]);
}, 60_000);

afterAll(async () => {
  await Promise.all((replicas ?? []).map((replica) => replica.stop()));
  await target?.destroy();
  await model?.close();
});

async function newAgent(): Promise<{ tenantId: string; agentId: string; key: string }> {
  const a = replicas[0] as ServiceReplica;
  const tenant = await replicaAdmin(a, 'POST', '/v1/admin/tenants', { name: 'Metered' });
  const agent = await replicaAdmin(a, 'POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  const key = await replicaAdmin(a, 'POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] });
  await replicaAdmin(a, 'PUT', `/v1/admin/agents/${agent.id}/config`, { schemaVersion: 1 });
  await replicaAdmin(a, 'POST', `/v1/admin/agents/${agent.id}/config/publish`);
  return { tenantId: String(tenant.id), agentId: String(agent.id), key: String(key.key) };
}

/** One turn on replica `index % 2`, read to its end: its status. */
async function turn(key: string, index: number): Promise<number> {
  const replica = replicas[index % 2] as ServiceReplica;
  const response = await replica.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(key, `user-${index}`), 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(`chat-${index}`, `turn ${index}`)),
  });
  const body = await response.text();
  if (response.status === 200) expect(sseChunks(body).at(-1)).toMatchObject({ type: 'finish' });
  return response.status;
}

async function tenantUsage(tenantId: string): Promise<Json> {
  const a = replicas[0] as ServiceReplica;
  const response = await a.fetch(`/v1/admin/usage?tenantId=${tenantId}`, adminRequest('GET'));
  return (await readJson(response)).items[0] ?? { inputTokens: 0, outputTokens: 0, turns: 0 };
}

/** The tenant's usage once every write has landed: the expected total, then still that a moment later. */
async function settledUsage(tenantId: string, turns: number): Promise<Json> {
  await pollUntil(
    () => tenantUsage(tenantId),
    (row) => row.turns >= turns,
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  return tenantUsage(tenantId);
}

describe('usage across replicas on PostgreSQL', () => {
  it('adds up concurrent turns of one tenant on both replicas exactly', async () => {
    const { tenantId, key } = await newAgent();
    const statuses = await Promise.all(Array.from({ length: 12 }, (_, index) => turn(key, index)));
    expect(statuses).toEqual(Array(12).fill(200));
    const row = await settledUsage(tenantId, 12);
    expect(row).toMatchObject({ turns: 12, inputTokens: 12 * (TOKENS_PER_TURN - 10), outputTokens: 12 * 10 });
  });

  it('overshoots a limit by at most the turns running when it was reached, then refuses on both', async () => {
    const { tenantId, key } = await newAgent();
    const limit = 3 * TOKENS_PER_TURN;
    await replicaAdmin(replicas[1] as ServiceReplica, 'PUT', `/v1/admin/tenants/${tenantId}/limits`, {
      tokensPerDay: limit,
    });
    // Two turns first (200 tokens, under the limit), then six at once: all six start under it.
    expect(await turn(key, 0)).toBe(200);
    expect(await turn(key, 1)).toBe(200);
    await settledUsage(tenantId, 2);
    const running = 6;
    const statuses = await Promise.all(Array.from({ length: running }, (_, index) => turn(key, 2 + index)));
    const admitted = statuses.filter((status) => status === 200).length;
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    const row = await settledUsage(tenantId, 2 + admitted);
    const used = row.inputTokens + row.outputTokens;
    expect(used).toBe((2 + admitted) * TOKENS_PER_TURN);
    // The bound the docs state: the limit plus what the turns running when it was reached used.
    expect(used - limit).toBeLessThanOrEqual(running * TOKENS_PER_TURN);
    expect(used).toBeGreaterThan(limit);
    for (const index of [0, 1]) {
      const replica = replicas[index] as ServiceReplica;
      const refused = await replica.fetch('/v1/chat', {
        method: 'POST',
        headers: { ...agentHeaders(key, 'late'), 'Content-Type': 'application/json' },
        body: JSON.stringify(chatBody(`late-${index}`, 'one more')),
      });
      expect(refused.status).toBe(429);
      expect(await readJson(refused)).toMatchObject({
        code: 'LIMIT_REACHED',
        limit: 'tokensPerDay',
        value: limit,
        used,
      });
    }
    // Nothing more was counted for the refused turns.
    expect(await tenantUsage(tenantId)).toMatchObject({ turns: 2 + admitted });
  });
});
