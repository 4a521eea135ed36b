import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseAnswerStore } from '../src/chat/database-answer-store.js';
import type { Database } from '../src/db/database.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { hostProcesses } from './support/host-processes.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { replicaAdmin, type ServiceReplica, startReplica } from './support/replica.js';
import {
  type ChatCompletionRequest,
  lastUserText,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from './support/scripted-model-server.js';
import { agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';
import { chatBody, sseChunks } from './support/ui-stream.js';

/**
 * Resumable answers across `mordn serve` processes on one PostgreSQL schema: an answer started on
 * A is replayed and followed on B, stopped from B, and settled by B when A dies (`kill -9`) or
 * shuts down with an answer running detached. Nothing stays "running".
 */

const DELTAS = 30;

function script(request: ChatCompletionRequest): ModelTurn {
  if (request.messages.some((message) => message.role === 'tool')) return { text: 'done' };
  const text = lastUserText(request);
  if (text.startsWith('sleep')) {
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: text, timeoutSeconds: 60 } }] };
  }
  // Slow enough to act on mid-answer; the very slow one outlives the kill and shutdown cases.
  const delay = text.startsWith('very slow') ? 500 : text.startsWith('steady') ? 250 : 100;
  return { text: Array.from({ length: DELTAS }, (_, index) => `part ${index} of ${text}. `), deltaDelayMs: delay };
}

let model: ScriptedModelServer;
let target: TestDatabaseTarget;
let database: Database;
let environment: Record<string, string>;
let a: ServiceReplica;
let b: ServiceReplica;
let key: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  [model, target] = await Promise.all([startScriptedModelServer(script), createTestDatabaseTarget()]);
  environment = {
    ...target.environment,
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_SIGNING_SECRET: 'answers-replicas-signing-secret-0123456789',
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
    MORDN_MODEL: 'openai-compatible:scripted-1',
    MORDN_MODEL_BASE_URL: model.baseUrl,
    MORDN_CHAT_COALESCE_MS: '0',
  };
  [a, b] = await Promise.all([startReplica(environment), startReplica(environment)]);
  database = await target.open();
  const tenant = await replicaAdmin(a, 'POST', '/v1/admin/tenants', { name: 'Answers' });
  const agent = await replicaAdmin(a, 'POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  key = String(
    (await replicaAdmin(a, 'POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] })).key,
  );
  await replicaAdmin(a, 'PUT', `/v1/admin/agents/${agent.id}/config`, {
    schemaVersion: 1,
    runtime: { sandbox: { enabled: true } },
  });
  await replicaAdmin(a, 'POST', `/v1/admin/agents/${agent.id}/config/publish`);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await database?.close();
  await target?.destroy();
  await model?.close();
});

function post(
  replica: ServiceReplica,
  chatId: string,
  text: string,
  options: { resumable?: boolean; signal?: AbortSignal } = {},
) {
  return replica.fetch('/v1/chat', {
    method: 'POST',
    headers: {
      ...agentHeaders(key, 'rita'),
      'Content-Type': 'application/json',
      ...(options.resumable ? { 'X-Chat-Resumable': '1' } : {}),
    },
    body: JSON.stringify(chatBody(chatId, text)),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

const resume = (replica: ServiceReplica, chatId: string) =>
  replica.fetch(`/v1/chat/${chatId}/stream`, { headers: agentHeaders(key, 'rita') });

/** Reads an SSE body to its end, noting when each `part N` first arrived. */
async function readTimed(response: Response, until?: string) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const arrivals = new Map<number, number>();
  let text = '';
  for (;;) {
    if (until && text.includes(until)) return { text, arrivals, reader };
    const { done, value } = await reader.read();
    if (done) return { text, arrivals, reader };
    text += decoder.decode(value, { stream: true });
    const now = Date.now();
    for (const match of text.matchAll(/part (\d+) of/g)) {
      const index = Number(match[1]);
      if (!arrivals.has(index)) arrivals.set(index, now);
    }
  }
}

async function storedAnswer(replica: ServiceReplica, chatId: string, timeoutMs = 15_000): Promise<Json> {
  const body = await pollUntil(
    async () => {
      const response = await replica.fetch(`/v1/chats/${chatId}`, { headers: agentHeaders(key, 'rita') });
      return response.status === 200 ? readJson(response) : undefined;
    },
    (chat) => chat?.messages.at(-1)?.role === 'assistant',
    { timeoutMs, intervalMs: 100 },
  );
  return body?.messages.at(-1);
}

const running = () =>
  database.db.selectFrom('chat_answers').select('answer_id').where('status', '=', 'running').execute();

describe('an answer started on A', () => {
  it('is replayed and followed on B, chunk for chunk what A sends, live within 250 ms', async () => {
    const first = await post(a, 'fanout', 'slow fanout');
    const onA = readTimed(first);
    await sleep(400);
    const resumed = await resume(b, 'fanout');
    expect(resumed.status).toBe(200);
    const [fromA, fromB] = await Promise.all([onA, readTimed(resumed)]);
    expect(fromB.text).toBe(fromA.text);
    expect(sseChunks(fromA.text).at(-1)?.type).toBe('finish');
    // Parts B saw live (after its replay), against when A's reader saw them.
    const lags = [...fromA.arrivals]
      .filter(([index]) => index >= 10)
      .map(([index, at]) => (fromB.arrivals.get(index) ?? Number.POSITIVE_INFINITY) - at)
      .sort((x, y) => x - y);
    expect(lags.length).toBeGreaterThan(10);
    expect(lags[Math.floor(lags.length / 2)]).toBeLessThan(250);
  });

  it('runs the model once for duplicate POSTs racing on A and B, each of which gets the answer', async () => {
    // One client retrying the same message (the same id) on both replicas at once.
    const body = JSON.stringify(chatBody('racing', 'slow racing'));
    const headers = { ...agentHeaders(key, 'rita'), 'Content-Type': 'application/json' };
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        (index % 2 === 0 ? a : b).fetch('/v1/chat', { method: 'POST', headers, body }),
      ),
    );
    const texts = await Promise.all(
      responses.map(async (response) => ({ status: response.status, text: await response.text() })),
    );
    for (const { status, text } of texts) {
      expect(status).toBe(200);
      expect(sseChunks(text).at(-1)?.type).toBe('finish');
      expect(text).toContain(`part ${DELTAS - 1} of slow racing`);
    }
    expect(model.requests.filter((request) => lastUserText(request) === 'slow racing')).toHaveLength(1);
  });

  it('stops from B: the model request is aborted, both readers end with abort, stored as a stop', async () => {
    const first = await post(a, 'stop-b', 'slow stop on b', { resumable: true });
    const onA = readTimed(first, 'part 2 ');
    const { reader: aReader, text: aHead } = await onA;
    const index = model.requests.findIndex((request) => lastUserText(request) === 'slow stop on b');
    const onB = readTimed(await resume(b, 'stop-b'));
    const stopped = await b.fetch('/v1/chat/stop-b/stop', { method: 'POST', headers: agentHeaders(key, 'rita') });
    expect(stopped.status).toBe(204);
    await model.waitForDisconnect(index, 2_000);
    const decoder = new TextDecoder();
    let rest = aHead;
    for (;;) {
      const { done, value } = await aReader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
    }
    expect(sseChunks(rest).at(-1)).toEqual({ type: 'abort' });
    expect(sseChunks((await onB).text).at(-1)).toEqual({ type: 'abort' });
    expect((await storedAnswer(b, 'stop-b')).metadata?.mordn?.interrupted).toEqual({ reason: 'stop' });
  });

  it('stops from B a sandbox command running through A: the process is gone within 2 s', async () => {
    const command = 'sleep 43.5';
    const first = await post(a, 'stop-sandbox', command, { resumable: true });
    const onA = readTimed(first);
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length > 0,
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    const at = Date.now();
    expect(
      (await b.fetch('/v1/chat/stop-sandbox/stop', { method: 'POST', headers: agentHeaders(key, 'rita') })).status,
    ).toBe(204);
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length === 0,
      { timeoutMs: 2_000, intervalMs: 50 },
    );
    expect(Date.now() - at).toBeLessThan(2_000);
    expect(sseChunks((await onA).text).at(-1)).toEqual({ type: 'abort' });
    expect((await storedAnswer(a, 'stop-sandbox')).metadata?.mordn?.interrupted).toEqual({ reason: 'stop' });
  });
});

describe('a resumable answer whose client left A while a reader follows it on B', () => {
  it('runs on past its grace for as long as B reads, and B gets all of it', async () => {
    const c = await startReplica({ ...environment, MORDN_CHAT_DETACHED_GRACE_SECONDS: '1' });
    try {
      const client = new AbortController();
      const first = await post(c, 'kept-by-b', 'steady kept by b', { resumable: true, signal: client.signal });
      await readTimed(first, 'part 1 of');
      const onB = readTimed(await resume(b, 'kept-by-b'));
      client.abort();
      // 30 parts 250 ms apart: the answer outlives its 1 s grace several times over.
      const { text } = await onB;
      expect(sseChunks(text).at(-1)?.type).toBe('finish');
      expect(text).toContain(`part ${DELTAS - 1} of steady kept by b`);
      expect((await storedAnswer(b, 'kept-by-b')).metadata?.mordn?.interrupted).toBeUndefined();
    } finally {
      await c.stop();
    }
  });
});

describe('a replica behind a pooler that breaks LISTEN (MORDN_CHAT_FANOUT=poll)', () => {
  it('follows an answer running on A and stops it from there, by polling', async () => {
    const c = await startReplica({ ...environment, MORDN_CHAT_FANOUT: 'poll' });
    try {
      const first = await post(a, 'polled', 'slow polled', { resumable: true });
      const { reader: aReader, text: aHead } = await readTimed(first, 'part 1 ');
      const index = model.requests.findIndex((request) => lastUserText(request) === 'slow polled');
      const onC = readTimed(await resume(c, 'polled'), 'part 8 ');
      const { text: cHead, reader: cReader } = await onC;
      expect(cHead).toContain('part 8 of slow polled');
      const stopped = await c.fetch('/v1/chat/polled/stop', { method: 'POST', headers: agentHeaders(key, 'rita') });
      expect(stopped.status).toBe(204);
      await model.waitForDisconnect(index, 2_000);
      const decoder = new TextDecoder();
      const drain = async (reader: ReadableStreamDefaultReader<Uint8Array>, start: string) => {
        let text = start;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return text;
          text += decoder.decode(value, { stream: true });
        }
      };
      const [onA, fromC] = await Promise.all([drain(aReader, aHead), drain(cReader, cHead)]);
      expect(fromC).toBe(onA);
      expect(sseChunks(fromC).at(-1)).toEqual({ type: 'abort' });
    } finally {
      await c.stop();
    }
  });
});

describe('the answer store on PostgreSQL', () => {
  it('pushes events when a notification comes back on its LISTEN connection', async () => {
    const store = await createDatabaseAnswerStore(database);
    try {
      expect(store.delivery).toBe('push');
    } finally {
      await store.close();
    }
  });

  it('polls, and says why, when LISTEN is accepted but nothing ever arrives (a pooler in transaction mode)', async () => {
    const problems: unknown[] = [];
    const deaf: Database = { ...database, listen: async () => async () => undefined };
    const store = await createDatabaseAnswerStore(deaf, { onListenError: (error) => problems.push(error) });
    try {
      expect(store.delivery).toBe('poll');
      expect(String(problems[0])).toContain('no notification came back on "mordn_answers" within 2000 ms');
    } finally {
      await store.close();
    }
  });
});

describe('a replica that goes away mid-answer', () => {
  it('after SIGTERM, an answer it ran detached is stored failed when the shutdown time is up, and its reader on B ends', async () => {
    const c = await startReplica({ ...environment, MORDN_SHUTDOWN_TIMEOUT_MS: '1000' });
    const controller = new AbortController();
    const first = await post(c, 'sigterm', 'very slow sigterm', { resumable: true, signal: controller.signal });
    await readTimed(first, 'part 1 ');
    controller.abort();
    const onB = readTimed(await resume(b, 'sigterm'));
    const exit = await c.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    const fromB = await onB;
    expect(sseChunks(fromB.text).at(-1)).toEqual({ type: 'abort' });
    const stored = await storedAnswer(b, 'sigterm');
    expect(stored.metadata?.mordn?.interrupted).toEqual({ reason: 'failed' });
    expect(stored.parts.find((part: Json) => part.type === 'text')?.text).toContain('part 1 of very slow sigterm');
  });

  it('after kill -9, B stores what the log holds as failed within 30 s, ends its reader, and nothing stays running', async () => {
    const doomed = await startReplica(environment);
    const first = await post(doomed, 'killed', 'very slow killed');
    await readTimed(first, 'part 2 ');
    const onB = readTimed(await resume(b, 'killed'));
    await sleep(300);
    const killedAt = Date.now();
    doomed.process.child.kill('SIGKILL');
    await doomed.process.exited;
    const fromB = await onB;
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(sseChunks(fromB.text).at(-1)).toEqual({ type: 'abort' });
    const stored = await storedAnswer(b, 'killed', 30_000);
    expect(stored.metadata?.mordn?.interrupted).toEqual({ reason: 'failed' });
    expect(stored.parts.find((part: Json) => part.type === 'text')?.text).toContain('part 2 of very slow killed');
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(await running()).toEqual([]);
  }, 60_000);
});
