import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createMordnHandler, type MordnHandlerOptions } from '../src/hosted/create-mordn-handler.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type ServiceReplica, startReplica } from './support/replica.js';
import {
  type ChatCompletionRequest,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from './support/scripted-model-server.js';
import { chatBody } from './support/ui-stream.js';

/**
 * Chat streams through `createMordnHandler`, against a service in a child process, so that the
 * fake clock of the long-answer case moves only the handler's (and the model's) timers.
 */

const KiB = 1024;
const MiB = 1024 * KiB;
const BIG_DELTAS = 80;
const BIG_DELTA = 'x'.repeat(64 * KiB);

function script(request: ChatCompletionRequest): ModelTurn {
  const text = JSON.stringify(request.messages.filter((message) => message.role === 'user').at(-1)?.content);
  if (text.includes('BIG')) return { text: Array.from({ length: BIG_DELTAS }, () => BIG_DELTA) };
  // Most of the answer comes more than 120 s after its first words.
  if (text.includes('SLOW')) return { text: ['first ', 'second'], deltaDelayMs: 130_000 };
  if (text.includes('HANG')) return { hang: true };
  return { text: 'hello' };
}

let model: ScriptedModelServer;
let target: TestDatabaseTarget;
let replica: ServiceReplica;
let database: Database;
let fixture: AgentFixture;

beforeAll(async () => {
  [model, target] = await Promise.all([startScriptedModelServer(script), createTestDatabaseTarget()]);
  replica = await startReplica({
    ...target.environment,
    MORDN_MODEL: 'openai-compatible:scripted-1',
    MORDN_MODEL_BASE_URL: model.baseUrl,
  });
  database = await target.open();
  fixture = await createAgentFixture(database.db);
}, 60_000);

afterAll(async () => {
  await replica?.stop();
  await database?.close();
  await model?.close();
  await target?.destroy();
});

const handlerFor = (options: Partial<MordnHandlerOptions> = {}) =>
  createMordnHandler({
    apiKey: fixture.key,
    getUserId: () => 'stream-user',
    selfBaseUrl: replica.url,
    ...options,
  });

const chatRequest = (chatId: string, text: string) =>
  new Request('http://app.example/api/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, text)),
  });

/** The text deltas of a UI message stream, joined. */
function answerText(stream: string): string {
  return stream
    .split('\n\n')
    .filter((event) => event.startsWith('data: {'))
    .map((event) => JSON.parse(event.slice('data: '.length)) as { type: string; delta?: string })
    .filter((chunk) => chunk.type === 'text-delta')
    .map((chunk) => chunk.delta)
    .join('');
}

describe('createMordnHandler chat streams', () => {
  it('passes a 5 MiB answer through whole (the 1 MiB sandbox-call bound does not apply)', async () => {
    const response = await handlerFor().POST(chatRequest('big-answer', 'BIG'));
    expect(response.status).toBe(200);
    const text = answerText(await response.text());
    expect(text.length).toBe(BIG_DELTAS * BIG_DELTA.length);
    expect(text.length).toBeGreaterThanOrEqual(5 * MiB);
  });

  it('cuts an answer off past a configured ceiling', async () => {
    const response = await handlerFor({ maxStreamBytes: 2 * MiB }).POST(chatRequest('capped-answer', 'BIG'));
    await expect(response.text()).rejects.toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
  });

  it('streams an answer for longer than 120 s when streamTimeoutMs allows it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
    try {
      const response = await handlerFor({ streamTimeoutMs: 10 * 60 * 1000 }).POST(chatRequest('slow-answer', 'SLOW'));
      expect(response.status).toBe(200);
      const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
      let stream = '';
      while (!answerText(stream).includes('first')) {
        const { done, value } = await reader.read();
        if (done) break;
        stream += value;
      }
      expect(answerText(stream)).toBe('first ');
      // The model pauses 130 s (on the fake clock) before its next words.
      await vi.advanceTimersByTimeAsync(131_000);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        stream += value;
      }
      expect(answerText(stream)).toBe('first second');
      expect(stream).toContain('"type":"finish"');
    } finally {
      vi.useRealTimers();
    }
  });

  it('hands streamTimeoutMs to the API, whose run ends the answer itself at that deadline', async () => {
    const index = model.requests.length;
    const started = Date.now();
    const response = await handlerFor({ streamTimeoutMs: 1_500 }).POST(chatRequest('deadline-answer', 'HANG'));
    // The API's own deadline closes the stream: it ends normally instead of being cut by the handler.
    const stream = await response.text();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(8_000);
    expect(stream).toMatch(/"type":"(abort|error)"/);
    await model.waitForDisconnect(index);
  });

  it('refuses a deadline outside the API range with a 400 naming the header', async () => {
    const response = await replica.fetch('/v1/chat', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${fixture.key}`,
        'X-Chat-User': 'stream-user',
        'Content-Type': 'application/json',
        'X-Mordn-Stream-Timeout-Ms': '50',
      },
      body: JSON.stringify(chatBody('bad-deadline', 'hello')),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      detail: expect.stringContaining('X-Mordn-Stream-Timeout-Ms'),
    });
  });
});
