import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUsage, sweepUsage } from '../src/usage/usage-ledger.js';
import { USAGE_COUNTERS } from '../src/usage/usage-types.js';
import { nextUtcDay, nextUtcMonth, utcDay } from '../src/utc-days.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { SANDBOX_ENABLED_CONFIG, startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn, ScriptedModelServer } from './support/scripted-model-server.js';
import { adminRequest, agentHeaders, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';
import { upload } from './support/upload.js';

/** What the scripted model reports for each kind of turn: the figures the usage must add up to. */
const PLAIN = { promptTokens: 100, completionTokens: 20, cachedTokens: 30, reasoningTokens: 5 };
const TOOL_STEP = { promptTokens: 50, completionTokens: 10 };
const ANSWER_STEP = { promptTokens: 70, completionTokens: 15 };

function script(request: ChatCompletionRequest): ModelTurn {
  const users = request.messages.filter((message) => message.role === 'user');
  const text = JSON.stringify(users.at(-1)?.content ?? '');
  const afterTool = request.messages.at(-1)?.role === 'tool';
  if (text.includes('SCENARIO tool')) {
    return afterTool
      ? { text: 'It printed hi.', usage: ANSWER_STEP }
      : { toolCalls: [{ name: 'sandbox_exec', arguments: { command: 'echo hi' } }], usage: TOOL_STEP };
  }
  if (text.includes('SCENARIO silent')) return { text: 'No usage from me.', usage: null };
  return { text: 'Hello.', usage: PLAIN };
}

let model: ScriptedModelServer;
let service: TestService;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ model, service, close } = await startScriptedChatService(script, {
    environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
  }));
});
afterAll(() => close());

const admin = (method: string, path: string, body?: unknown) => service.fetch(path, adminRequest(method, body));

async function turn(fixture: AgentFixture, text: string, userId = 'user-1', chatId = `chat-${Math.random()}`) {
  const response = await service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, userId), 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, text)),
  });
  if (response.status === 200) await readUiChunks(response);
  await service.deps.usage?.flush();
  return response;
}

async function usage(query: string): Promise<Json> {
  const response = await admin('GET', `/v1/admin/usage?${query}`);
  expect(response.status).toBe(200);
  return readJson(response);
}

const ZERO_COUNTERS = Object.fromEntries(USAGE_COUNTERS.map((counter) => [counter, 0]));

describe('metering chat turns', () => {
  it('adds each step as the model reported it, counts the turn once and the sandbox call by tool', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    expect((await turn(fixture, 'SCENARIO tool', 'ada')).status).toBe(200);
    const { items } = await usage(`tenantId=${fixture.tenantId}&groupBy=user`);
    expect(items).toEqual([
      {
        ...ZERO_COUNTERS,
        tenantId: fixture.tenantId,
        agentId: fixture.agentId,
        userId: 'ada',
        inputTokens: TOOL_STEP.promptTokens + ANSWER_STEP.promptTokens,
        outputTokens: TOOL_STEP.completionTokens + ANSWER_STEP.completionTokens,
        turns: 1,
        toolCalls: 1,
        sandboxCpuSeconds: expect.any(Number),
        sandboxMemoryGibSeconds: expect.any(Number),
        diskGibHours: expect.any(Number),
      },
    ]);
    const byTool = await service.database.db
      .selectFrom('usage_tool_calls')
      .select(['tool', 'outcome', 'calls'])
      .where('tenant_id', '=', fixture.tenantId)
      .execute();
    expect(byTool).toEqual([{ tool: 'sandbox_exec', outcome: 'ok', calls: 1 }]);
  });

  it('keeps cached input and reasoning apart, and counts a model without usage as such', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    await turn(fixture, 'hello', 'bo');
    await turn(fixture, 'SCENARIO silent', 'bo');
    const { items } = await usage(`tenantId=${fixture.tenantId}`);
    expect(items).toEqual([
      {
        ...ZERO_COUNTERS,
        tenantId: fixture.tenantId,
        inputTokens: PLAIN.promptTokens,
        outputTokens: PLAIN.completionTokens,
        cachedInputTokens: PLAIN.cachedTokens,
        reasoningTokens: PLAIN.reasoningTokens,
        turns: 2,
        turnsWithoutUsage: 1,
      },
    ]);
  });
});

describe('limits', () => {
  it('refuses the third of three turns against a daily limit of two turns, with the exact fields', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    const perTurn = PLAIN.promptTokens + PLAIN.completionTokens;
    const set = await admin('PUT', `/v1/admin/tenants/${fixture.tenantId}/limits`, { tokensPerDay: 2 * perTurn });
    expect(await readJson(set)).toEqual({
      tokensPerDay: 2 * perTurn,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: null,
      storageBytes: null,
    });
    const requestsBefore = model.requests.length;
    expect((await turn(fixture, 'one')).status).toBe(200);
    expect((await turn(fixture, 'two')).status).toBe(200);
    const refused = await turn(fixture, 'three');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    const problem = await readJson(refused);
    expect(problem).toMatchObject({
      status: 429,
      code: 'LIMIT_REACHED',
      limit: 'tokensPerDay',
      value: 2 * perTurn,
      used: 2 * perTurn,
      resetAt: nextUtcDay(Date.now()).toISOString(),
    });
    expect(problem.detail).toContain('daily token limit');
    // The refused turn never reached the model, and its question was not stored.
    expect(model.requests.length - requestsBefore).toBe(2);
    const { items } = await usage(`tenantId=${fixture.tenantId}`);
    expect(items[0]).toMatchObject({ inputTokens: 2 * PLAIN.promptTokens, outputTokens: 2 * PLAIN.completionTokens });
    expect(items[0].turns).toBe(2);
  });

  it("holds an agent's monthly limit of 0 at once, beside an unlimited tenant", async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    await admin('PUT', `/v1/admin/agents/${fixture.agentId}/limits`, { tokensPerMonth: 0 });
    const refused = await turn(fixture, 'hello');
    expect(refused.status).toBe(429);
    expect(await readJson(refused)).toMatchObject({
      code: 'LIMIT_REACHED',
      limit: 'tokensPerMonth',
      value: 0,
      used: 0,
      resetAt: nextUtcMonth(Date.now()).toISOString(),
    });
  });

  it('validates limits strictly, answers 404 for unknown owners, and audits every change', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    const path = `/v1/admin/tenants/${fixture.tenantId}/limits`;
    expect(await readJson(await admin('GET', path))).toEqual({
      tokensPerDay: null,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: null,
      storageBytes: null,
    });
    for (const body of [{ tokensPerDay: -1 }, { tokensPerDay: 1.5 }, { tokensPerDay: '5' }, { tokens: 5 }]) {
      const response = await admin('PUT', path, body);
      expect(response.status).toBe(400);
      expect((await readJson(response)).code).toBe('VALIDATION_FAILED');
    }
    expect(await readJson(await admin('GET', path))).toMatchObject({ tokensPerDay: null });
    expect((await admin('GET', '/v1/admin/tenants/tenant_missing/limits')).status).toBe(404);
    expect((await admin('PUT', '/v1/admin/agents/agent_missing/limits', {})).status).toBe(404);
    const all = { tokensPerDay: 1, tokensPerMonth: 2, sandboxCpuSecondsPerDay: 3, storageBytes: 4 };
    expect(await readJson(await admin('PUT', path, all))).toEqual(all);
    expect(await readJson(await admin('PUT', path, { storageBytes: 9 }))).toEqual({
      tokensPerDay: null,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: null,
      storageBytes: 9,
    });
    const audit = await readJson(await admin('GET', '/v1/admin/audit?limit=100'));
    const writes = audit.items.filter(
      (entry: Json) =>
        entry.route === '/v1/admin/tenants/:tenantId/limits' && entry.target?.tenantId === fixture.tenantId,
    );
    expect(writes.map((entry: Json) => entry.status).sort()).toEqual([200, 200, 400, 400, 400, 400]);
  });

  it('refuses an upload over the storage limit with 413 and stores nothing', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    await admin('PUT', `/v1/admin/tenants/${fixture.tenantId}/limits`, { storageBytes: 20 });
    const fits = await upload(service, fixture.key, { bytes: 'name,n\nada,1\n', filename: 'a.csv', type: 'text/csv' });
    expect(fits.status).toBe(201);
    const over = await upload(service, fixture.key, { bytes: 'name,n\nbo,22\n', filename: 'b.csv', type: 'text/csv' });
    expect(over.status).toBe(413);
    expect(await readJson(over)).toMatchObject({
      code: 'LIMIT_REACHED',
      limit: 'storageBytes',
      value: 20,
      used: 13,
      resetAt: null,
    });
    const rows = await service.database.db
      .selectFrom('stored_files')
      .select('filename')
      .where('tenant_id', '=', fixture.tenantId)
      .execute();
    expect(rows).toEqual([{ filename: 'a.csv' }]);
  });

  it('meters published bytes, and refuses a publish past the storage limit as an MCP error, storing nothing', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    const client = await connectSdkClient(service, fixture.key, 'pub');
    try {
      await callTool(client, 'sandbox_write_file', { path: 'small.csv', content: 'a,b\n1,2\n' });
      await callTool(client, 'sandbox_write_file', { path: 'large.csv', content: `a,b\n${'1,2\n'.repeat(20)}` });
      expect((await callTool(client, 'sandbox_publish_file', { path: 'small.csv' })).isError).toBe(false);
      await admin('PUT', `/v1/admin/agents/${fixture.agentId}/limits`, { storageBytes: 40 });
      const refused = await callTool(client, 'sandbox_publish_file', { path: 'large.csv' });
      expect(refused.isError).toBe(true);
      expect(refused.value).toMatchObject({
        error: { code: 'LIMIT_REACHED', limit: 'storageBytes', value: 40, used: 8, resetAt: null },
      });
    } finally {
      await client.close();
    }
    await service.deps.usage?.flush();
    const stored = await service.database.db
      .selectFrom('stored_files')
      .select('size')
      .where('agent_id', '=', fixture.agentId)
      .execute();
    expect(stored).toEqual([{ size: 8 }]);
    expect((await usage(`tenantId=${fixture.tenantId}`)).items[0].artifactBytesPublished).toBe(8);
  });

  it('refuses sandbox calls past the CPU limit as an MCP error with the same fields, provisioning nothing', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    await admin('PUT', `/v1/admin/agents/${fixture.agentId}/limits`, { sandboxCpuSecondsPerDay: 0 });
    const client = await connectSdkClient(service, fixture.key, 'cy');
    try {
      const result = await callTool(client, 'sandbox_exec', { command: 'echo should-not-run' });
      expect(result.isError).toBe(true);
      expect(result.value).toMatchObject({
        error: {
          code: 'LIMIT_REACHED',
          limit: 'sandboxCpuSecondsPerDay',
          value: 0,
          used: 0,
          resetAt: nextUtcDay(Date.now()).toISOString(),
        },
      });
    } finally {
      await client.close();
    }
    const workspaces = await service.database.db
      .selectFrom('workspaces')
      .select('id')
      .where('agent_id', '=', fixture.agentId)
      .execute();
    expect(workspaces).toEqual([]);
  });
});

describe('GET /v1/admin/usage', () => {
  let tenants: string[];
  let agents: string[];
  const day = (offset: number) => utcDay(Date.now() + offset * 24 * 60 * 60 * 1000);

  beforeAll(async () => {
    tenants = [];
    agents = [];
    for (let index = 0; index < 3; index += 1) {
      const fixture = await createAgentFixture(service.database.db);
      tenants.push(fixture.tenantId);
      agents.push(fixture.agentId);
      const owner = { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: `u,"${index}` };
      await addUsage(service.database.db, owner, { inputTokens: 10 + index, turns: 1 }, Date.now());
      await addUsage(service.database.db, owner, { inputTokens: 5, sandboxCpuSeconds: 1.25 }, Date.now() - 86_400_000);
      await addUsage(service.database.db, owner, { inputTokens: 1000 }, Date.now() - 40 * 86_400_000);
    }
  });

  it('sums per tenant over the last 30 days by default, and per day, agent or user on request', async () => {
    const [first] = tenants;
    const total = await usage(`tenantId=${first}`);
    expect(total).toEqual({
      items: [{ ...ZERO_COUNTERS, tenantId: first, inputTokens: 15, turns: 1, sandboxCpuSeconds: 1.25 }],
      nextCursor: null,
    });
    const days = await usage(`tenantId=${first}&groupBy=day`);
    expect(days.items.map((row: Json) => [row.day, row.inputTokens])).toEqual([
      [day(-1), 5],
      [day(0), 10],
    ]);
    const wide = await usage(`tenantId=${first}&from=${day(-45)}&to=${day(0)}`);
    expect(wide.items[0].inputTokens).toBe(1015);
    const users = await usage(`tenantId=${first}&groupBy=user`);
    expect(users.items).toEqual([expect.objectContaining({ userId: 'u,"0', inputTokens: 15 })]);
    expect(users.items[0].agentId).toBe(agents[0]);
  });

  it('pages with a cursor without skipping or repeating a row', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await usage(`limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(1);
      seen.push(...page.items.map((row: Json) => row.tenantId));
      cursor = page.nextCursor;
    } while (cursor);
    for (const tenantId of tenants) expect(seen.filter((seenId) => seenId === tenantId)).toHaveLength(1);
    expect(seen).toEqual([...seen].sort());
  });

  it('answers CSV with the JSON keys as its header, quoting what needs it', async () => {
    const [first] = tenants;
    const response = await admin('GET', `/v1/admin/usage?tenantId=${first}&groupBy=user&format=csv`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await response.text()).split('\r\n');
    expect(lines[0]).toBe(['tenantId', 'agentId', 'userId', ...USAGE_COUNTERS].join(','));
    const json = (await usage(`tenantId=${first}&groupBy=user`)).items[0];
    expect(lines[1]).toBe(
      [json.tenantId, json.agentId, '"u,""0"', ...USAGE_COUNTERS.map((counter) => String(json[counter]))].join(','),
    );
    expect(lines.slice(2)).toEqual(['']);
  });

  it('refuses bad queries with 400 and the parameter named', async () => {
    for (const [query, path] of [
      [`from=${day(0)}&to=${day(-1)}`, 'from'],
      [`from=${day(-400)}&to=${day(0)}`, 'from'],
      ['from=2026-02-30', 'from'],
      ['groupBy=month', 'groupBy'],
      ['limit=0', 'limit'],
      ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
      ['tenant=x', ''],
    ] as const) {
      const response = await admin('GET', `/v1/admin/usage?${query}`);
      expect(response.status, query).toBe(400);
      const problem = await readJson(response);
      expect(problem.code).toBe('VALIDATION_FAILED');
      if (path) expect(problem.errors.map((error: Json) => error.path)).toContain(path);
    }
    const unauthenticated = await service.fetch('/v1/admin/usage');
    expect(unauthenticated.status).toBe(401);
  });

  it('drops rows past the retention, keeping the rest', async () => {
    const [first] = tenants;
    const removed = await sweepUsage(service.database.db, 30);
    expect(removed).toBeGreaterThanOrEqual(3);
    const wide = await usage(`tenantId=${first}&from=${day(-45)}&to=${day(0)}`);
    expect(wide.items[0].inputTokens).toBe(15);
  });
});

describe('erasure', () => {
  it('keeps the sums under the keyed hash and leaves no row naming the user; the dry run says so', async () => {
    const fixture = await createAgentFixture(service.database.db, { published: SANDBOX_ENABLED_CONFIG });
    expect((await turn(fixture, 'SCENARIO tool', 'dee')).status).toBe(200);
    await turn(fixture, 'hello', 'eve');
    const before = await usage(`tenantId=${fixture.tenantId}`);
    const erase = (dryRun: boolean) =>
      admin('POST', `/v1/admin/agents/${fixture.agentId}/users/dee/erase`, { dryRun, include: ['chats'] });
    const dry = await readJson(await erase(true));
    // The day row, the tool calls by tool, and the one tool call's own record.
    expect(dry.usageRows).toBe(3);
    expect((await usage(`tenantId=${fixture.tenantId}&userId=dee`)).items).toHaveLength(1);
    const done = await readJson(await erase(false));
    expect(done).toMatchObject({ status: 'complete', usageRows: 3 });
    // The sums stay true: what the user used is still counted (the sandbox's last reading, billed
    // as erasure removed the workspace, may add to its figures).
    const after = (await usage(`tenantId=${fixture.tenantId}`)).items[0];
    for (const counter of ['inputTokens', 'outputTokens', 'turns', 'toolCalls'] as const) {
      expect(after[counter], counter).toBe(before.items[0][counter]);
    }
    expect(after.sandboxCpuSeconds).toBeGreaterThanOrEqual(before.items[0].sandboxCpuSeconds);
    expect((await usage(`tenantId=${fixture.tenantId}&userId=dee`)).items).toEqual([]);
    const hashed = await usage(`tenantId=${fixture.tenantId}&userId=erased:${service.deps.userHash('dee')}`);
    expect(hashed.items[0].inputTokens).toBe(TOOL_STEP.promptTokens + ANSWER_STEP.promptTokens);
    for (const table of ['usage_daily', 'usage_tool_calls', 'tool_calls'] as const) {
      const named = await service.database.db
        .selectFrom(table as 'usage_daily')
        .select('user_id')
        .where('user_id', '=', 'dee')
        .execute();
      expect(named, table).toEqual([]);
    }
    expect((await usage(`tenantId=${fixture.tenantId}&userId=eve`)).items[0].turns).toBe(1);
    expect((await readJson(await erase(true))).usageRows).toBe(0);
  });
});
