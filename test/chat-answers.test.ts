import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOO_LONG_TO_RESUME } from '../src/chat/answer-runs.js';
import type { AgentFixture } from './support/fixtures.js';
import { hostProcesses } from './support/host-processes.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import {
  type ChatCompletionRequest,
  lastUserText,
  type ModelTurn,
  type ScriptedModelServer,
} from './support/scripted-model-server.js';
import { adminRequest, agentHeaders, type TestService } from './support/service.js';
import { chatBody, sseChunks } from './support/ui-stream.js';

/**
 * Answers that outlive their response, on the service's own `POST /v1/chat`, over real HTTP with a
 * scripted model and real bubblewrap sandboxes: replay and follow (`GET …/stream`), several
 * readers, the opt-in detach and its grace, stop from anywhere, one model run per turn however
 * many retries, the 409s, and DELETE during an answer.
 */

const DELTAS = 24;
const GRACE_SECONDS = 2;

/** `slow …`: 24 deltas 60 ms apart; `sleep <s>`: a sandbox command; `long`: a large answer; else a short one. */
function script(request: ChatCompletionRequest): ModelTurn {
  if (request.messages.some((message) => message.role === 'tool')) return { text: 'done' };
  const text = lastUserText(request);
  if (text.startsWith('crawl')) {
    return { text: Array.from({ length: DELTAS }, (_, index) => `part ${index} of ${text}. `), deltaDelayMs: 300 };
  }
  if (text.startsWith('slow')) {
    return { text: Array.from({ length: DELTAS }, (_, index) => `part ${index} of ${text}. `), deltaDelayMs: 60 };
  }
  if (text.startsWith('sleep')) {
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: text, timeoutSeconds: 60 } }] };
  }
  if (text.startsWith('long')) {
    return { text: Array.from({ length: 40 }, (_, index) => `${index}:${'x'.repeat(4_000)} `), deltaDelayMs: 40 };
  }
  return { text: `Answer to ${text}.` };
}

let model: ScriptedModelServer;
let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ model, service, fixture, close } = await startScriptedChatService(script, {
    environment: {
      MORDN_CHAT_DETACHED_GRACE_SECONDS: String(GRACE_SECONDS),
      MORDN_CHAT_RESUME_MAX_BYTES: String(64 * 1024),
      MORDN_CHAT_COALESCE_MS: '0',
      MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
    },
  }));
});
afterAll(() => close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function post(body: unknown, options: { user?: string; resumable?: boolean; signal?: AbortSignal } = {}) {
  return service.fetch('/v1/chat', {
    method: 'POST',
    headers: {
      ...agentHeaders(fixture.key, options.user ?? 'alice'),
      'Content-Type': 'application/json',
      ...(options.resumable ? { 'X-Chat-Resumable': '1' } : {}),
    },
    body: JSON.stringify(body),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

function resume(chatId: string, user = 'alice') {
  return service.fetch(`/v1/chat/${encodeURIComponent(chatId)}/stream`, { headers: agentHeaders(fixture.key, user) });
}

function stop(chatId: string, user = 'alice') {
  return service.fetch(`/v1/chat/${encodeURIComponent(chatId)}/stop`, {
    method: 'POST',
    headers: agentHeaders(fixture.key, user),
  });
}

async function history(chatId: string, user = 'alice'): Promise<Json | undefined> {
  const response = await service.fetch(`/v1/chats/${encodeURIComponent(chatId)}`, {
    headers: agentHeaders(fixture.key, user),
  });
  return response.status === 200 ? readJson(response) : undefined;
}

/** Reads an SSE body until it holds `needle`, returning what was read and the reader (still open). */
async function readUntil(response: Response, needle: string) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes(needle)) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return { text, reader };
}

async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>, start = ''): Promise<string> {
  const decoder = new TextDecoder();
  let text = start;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
}

async function storedAnswer(chatId: string, user = 'alice'): Promise<Json> {
  const body = await pollUntil(
    () => history(chatId, user),
    (chat) => chat?.messages.at(-1)?.role === 'assistant',
    { timeoutMs: 15_000, intervalMs: 100 },
  );
  return body?.messages.at(-1);
}

describe('GET /v1/chat/:chatId/stream', () => {
  it('replays a running answer from its first chunk and follows it live: byte for byte what the first reader got', async () => {
    const first = await post(chatBody('replay', 'slow replay'));
    expect(first.status).toBe(200);
    const { text: head, reader } = await readUntil(first, 'part 3 ');
    const resumed = await resume('replay');
    expect(resumed.status).toBe(200);
    expect(resumed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const [original, replayed] = await Promise.all([readRest(reader, head), resumed.text()]);
    expect(replayed).toBe(original);
    expect(original.endsWith('data: [DONE]\n\n')).toBe(true);
    const start = sseChunks(original).find((chunk) => chunk.type === 'start');
    expect(start?.messageId).toEqual(expect.any(String));
    expect(original).toContain(`part ${DELTAS - 1} of slow replay`);
    // Stored once, as a finished answer with that message id.
    const stored = await storedAnswer('replay');
    expect(stored.id).toBe(start?.messageId);
    expect(stored.metadata?.mordn?.interrupted).toBeUndefined();
  });

  it('gives three readers at once the whole answer each, and replays it for a minute after it is stored', async () => {
    const first = await post(chatBody('three', 'slow three'));
    const { text: head, reader } = await readUntil(first, 'part 1 ');
    const readers = await Promise.all([resume('three'), resume('three'), resume('three')]);
    const [original, ...others] = await Promise.all([
      readRest(reader, head),
      ...readers.map((response) => response.text()),
    ]);
    for (const other of others) expect(other).toBe(original);
    const after = await resume('three');
    expect(after.status).toBe(200);
    expect(await after.text()).toBe(original);
    expect(model.requests.filter((request) => lastUserText(request) === 'slow three')).toHaveLength(1);
  });

  it('stops replaying a stored answer once the minute has passed: its row and log are deleted', async () => {
    expect(await (await post(chatBody('purged', 'quick purged'))).text()).toContain('Answer to quick purged.');
    const store = service.deps.answers.store;
    const key = { space: `${fixture.tenantId}/${fixture.agentId}`, userId: 'alice', chatId: 'purged' };
    const record = await pollUntil(
      () => store.find(key, 0),
      (found) => found?.status === 'done',
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    const answerId = record?.answerId as string;
    expect((await store.read(answerId, 0)).length).toBeGreaterThan(2);
    await store.purge(Date.now() - 60_000);
    expect((await resume('purged')).status).toBe(200);
    await service.database.db
      .updateTable('chat_answers')
      .set({ finished_at: Date.now() - 61_000 })
      .where('answer_id', '=', answerId)
      .execute();
    await store.purge(Date.now() - 60_000);
    expect(await store.get(answerId)).toBeUndefined();
    expect(await store.read(answerId, 0)).toEqual([]);
    expect((await resume('purged')).status).toBe(204);
  });

  it('answers 204 when nothing runs, and to another user for a running chat (nothing revealed)', async () => {
    expect((await resume('never-started')).status).toBe(204);
    const first = await post(chatBody('private', 'slow private'));
    const { reader } = await readUntil(first, 'part 0 ');
    const other = await resume('private', 'mallory');
    expect(other.status).toBe(204);
    expect(await other.text()).toBe('');
    await readRest(reader);
  });

  it('tells a new reader past the log bound that the answer is too long to resume, while the answer goes on', async () => {
    const first = await post(chatBody('long', 'long one'));
    const { text: head, reader } = await readUntil(first, '"20:');
    const late = await resume('long');
    expect(late.status).toBe(200);
    const lateChunks = sseChunks(await late.text());
    expect(lateChunks).toEqual([{ type: 'error', errorText: TOO_LONG_TO_RESUME }]);
    const whole = await readRest(reader, head);
    expect(whole).toContain('"39:');
    expect(sseChunks(whole).at(-1)?.type).toBe('finish');
    expect((await storedAnswer('long')).parts.find((part: Json) => part.type === 'text')?.text).toContain('39:');
  });
});

describe('X-Chat-Resumable: 1', () => {
  it('keeps an answer running after its client left, for a reader that comes back within the grace', async () => {
    const controller = new AbortController();
    const first = await post(chatBody('detach', 'slow detach'), {
      resumable: true,
      signal: controller.signal,
    });
    await readUntil(first, 'part 1 ');
    controller.abort();
    await sleep(300);
    const resumed = await resume('detach');
    expect(resumed.status).toBe(200);
    const text = await resumed.text();
    expect(text).toContain(`part ${DELTAS - 1} of slow detach`);
    expect(sseChunks(text).at(-1)?.type).toBe('finish');
    const stored = await storedAnswer('detach');
    expect(stored.metadata?.mordn?.interrupted).toBeUndefined();
    expect(stored.parts.find((part: Json) => part.type === 'text')?.text).toContain(`part ${DELTAS - 1}`);
  });

  it('stops a detached answer nobody came back to once the grace ends: the sandbox process is killed, stored as a disconnect', async () => {
    const command = 'sleep 41.25';
    const controller = new AbortController();
    const first = await post(chatBody('grace', command), { resumable: true, signal: controller.signal });
    await readUntil(first, '"tool-input-available"');
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length > 0,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const left = Date.now();
    controller.abort();
    // Still running halfway through the grace.
    await sleep((GRACE_SECONDS * 1000) / 2);
    expect(await hostProcesses(command)).not.toEqual([]);
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length === 0,
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    expect(Date.now() - left).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 100);
    const stored = await storedAnswer('grace');
    expect(stored.metadata?.mordn?.interrupted).toEqual({ reason: 'disconnect' });
  });

  it('without the header, a client that leaves stops the answer at once', async () => {
    const controller = new AbortController();
    const first = await post(chatBody('no-header', 'slow no header'), { signal: controller.signal });
    await readUntil(first, 'part 1 ');
    const index = model.requests.findIndex((request) => lastUserText(request) === 'slow no header');
    controller.abort();
    await model.waitForDisconnect(index, 5_000);
    const stored = await storedAnswer('no-header');
    expect(stored.metadata?.mordn?.interrupted?.reason).toMatch(/^(stop|disconnect)$/);
    expect(stored.parts.find((part: Json) => part.type === 'text')?.text ?? '').not.toContain(`part ${DELTAS - 1}`);
  });
});

describe('POST /v1/chat/:chatId/stop', () => {
  it('stops the answer wherever it is read: the model request is aborted, the sandbox process killed, every reader ends with abort', async () => {
    const command = 'sleep 42.75';
    const first = await post(chatBody('stopped', command), { resumable: true });
    const { text: head, reader } = await readUntil(first, '"tool-input-available"');
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length > 0,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const second = await resume('stopped');
    const stopped = Date.now();
    const response = await stop('stopped');
    expect(response.status).toBe(204);
    const [original, other] = await Promise.all([readRest(reader, head), second.text()]);
    for (const sse of [original, other]) {
      expect(sseChunks(sse).at(-1)).toEqual({ type: 'abort' });
      expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);
    }
    await pollUntil(
      () => hostProcesses(command),
      (pids) => pids.length === 0,
      { timeoutMs: 2_000, intervalMs: 50 },
    );
    expect(Date.now() - stopped).toBeLessThan(2_000);
    expect((await storedAnswer('stopped')).metadata?.mordn?.interrupted).toEqual({ reason: 'stop' });
    // Idempotent, and for a chat with nothing running.
    expect((await stop('stopped')).status).toBe(204);
    expect((await stop('nothing-here')).status).toBe(204);
  });

  it("another user's stop stops nothing", async () => {
    const first = await post(chatBody('not-yours', 'slow not yours'));
    const { text: head, reader } = await readUntil(first, 'part 0 ');
    expect((await stop('not-yours', 'mallory')).status).toBe(204);
    const whole = await readRest(reader, head);
    expect(sseChunks(whole).at(-1)?.type).toBe('finish');
    expect((await storedAnswer('not-yours')).metadata?.mordn?.interrupted).toBeUndefined();
  });

  it('needs a key with write permission', async () => {
    const response = await service.fetch('/v1/chat/x/stop', { method: 'POST', headers: { 'X-Chat-User': 'alice' } });
    expect(response.status).toBe(401);
  });
});

describe('one turn, one answer', () => {
  it('stores the user message as the turn starts', async () => {
    const body = chatBody('question-first', 'slow question first');
    const first = await post(body);
    const { reader } = await readUntil(first, 'part 0 ');
    const during = await history('question-first');
    expect(during?.messages.map((message: Json) => message.role)).toEqual(['user']);
    expect(during?.messages[0].id).toBe((body.messages[0] as Json).id);
    await readRest(reader);
  });

  it('runs the model once for 20 concurrent duplicate POSTs, each of which gets the answer', async () => {
    const body = chatBody('duplicates', 'slow duplicates');
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(body)));
    const texts = await Promise.all(
      responses.map(async (response) => ({ status: response.status, text: await response.text() })),
    );
    for (const { status, text } of texts) {
      expect(status).toBe(200);
      expect(text).toContain(`part ${DELTAS - 1} of slow duplicates`);
    }
    expect(model.requests.filter((request) => lastUserText(request) === 'slow duplicates')).toHaveLength(1);
    const stored = await history('duplicates');
    expect(stored?.messages.map((message: Json) => message.role)).toEqual(['user', 'assistant']);
  });

  it('joins a retry to the running turn even once a limit is reached meanwhile, and refuses a new turn (429)', async () => {
    const limits = `/v1/admin/agents/${fixture.agentId}/limits`;
    const body = chatBody('limited', 'slow limited');
    const first = await post(body);
    const { text: head, reader } = await readUntil(first, 'part 0 ');
    const none = { tokensPerDay: null, tokensPerMonth: null, sandboxCpuSecondsPerDay: null, storageBytes: null };
    expect((await service.fetch(limits, adminRequest('PUT', { ...none, tokensPerDay: 0 }))).status).toBe(200);
    try {
      const retry = await post(body);
      expect(retry.status).toBe(200);
      const [firstRest, retried] = await Promise.all([readRest(reader, head), retry.text()]);
      expect(retried).toBe(firstRest);
      expect(model.requests.filter((request) => lastUserText(request) === 'slow limited')).toHaveLength(1);
      const next = await post(chatBody('limited', 'one more'));
      expect(next.status).toBe(429);
      expect(await readJson(next)).toMatchObject({ code: 'LIMIT_REACHED', limit: 'tokensPerDay', value: 0 });
    } finally {
      expect((await service.fetch(limits, adminRequest('PUT', none))).status).toBe(200);
    }
  });

  it('answers 409 ANSWER_IN_PROGRESS for another message or a regeneration while an answer runs, changing nothing', async () => {
    const first = await post(chatBody('busy', 'slow busy'));
    const { text: head, reader } = await readUntil(first, 'part 0 ');
    const other = await post(chatBody('busy', 'another question'));
    expect(other.status).toBe(409);
    expect((await readJson(other)).code).toBe('ANSWER_IN_PROGRESS');
    const regenerate = await post({ id: 'busy', messages: [], trigger: 'regenerate-message' });
    expect(regenerate.status).toBe(409);
    expect((await readJson(regenerate)).code).toBe('ANSWER_IN_PROGRESS');
    expect(sseChunks(await readRest(reader, head)).at(-1)?.type).toBe('finish');
    const stored = await history('busy');
    expect(stored?.messages.map((message: Json) => message.role)).toEqual(['user', 'assistant']);
    expect(model.requests.some((request) => lastUserText(request) === 'another question')).toBe(false);
  });

  it('answers 409 TURN_ALREADY_ANSWERED for a message answered already, and for an edit under its id', async () => {
    const body = chatBody('answered', 'quick one');
    expect(await (await post(body)).text()).toContain('Answer to quick one.');
    const stored = await history('answered');
    const assistantId = stored?.messages.at(-1)?.id;
    const again = await post(body);
    expect(again.status).toBe(409);
    expect(await readJson(again)).toMatchObject({ code: 'TURN_ALREADY_ANSWERED', assistantMessageId: assistantId });
    const edited = structuredClone(body);
    (edited.messages[0] as Json).parts = [{ type: 'text', text: 'an edit' }];
    const edit = await post(edited);
    expect(edit.status).toBe(409);
    expect((await readJson(edit)).assistantMessageId).toBe(assistantId);
    expect(await history('answered')).toEqual(stored);
  });

  it('DELETE during an answer stops it first, and its own save does not bring the chat back', async () => {
    const first = await post(chatBody('deleted', 'slow deleted'));
    const { text: head, reader } = await readUntil(first, 'part 1 ');
    const index = model.requests.findIndex((request) => lastUserText(request) === 'slow deleted');
    const deleted = await service.fetch('/v1/chats/deleted', {
      method: 'DELETE',
      headers: agentHeaders(fixture.key, 'alice'),
    });
    expect(deleted.status).toBe(204);
    expect(sseChunks(await readRest(reader, head)).at(-1)).toEqual({ type: 'abort' });
    await model.waitForDisconnect(index, 5_000);
    await sleep(500);
    expect(await history('deleted')).toBeUndefined();
    // Its log went with it.
    expect((await resume('deleted')).status).toBe(204);
  });

  it("a user's erasure stops their running answer first and deletes their answer logs", async () => {
    const done = await post(chatBody('erased-done', 'quick erased'), { user: 'erin' });
    expect(await done.text()).toContain('Answer to quick erased.');
    const first = await post(chatBody('erased', 'crawl erased'), { user: 'erin' });
    const { text: head, reader } = await readUntil(first, 'part 1 ');
    const answers = await service.database.db
      .selectFrom('chat_answers')
      .select('answer_id')
      .where('user_id', '=', 'erin')
      .execute();
    expect(answers).toHaveLength(2);
    const erased = await service.fetch(
      `/v1/admin/agents/${fixture.agentId}/users/erin/erase`,
      adminRequest('POST', { dryRun: false, include: ['chats'] }),
    );
    expect(erased.status).toBe(200);
    expect(sseChunks(await readRest(reader, head)).at(-1)).toEqual({ type: 'abort' });
    const left = await service.database.db
      .selectFrom('chat_answers')
      .select(['answer_id', 'status'])
      .where('user_id', '=', 'erin')
      .execute();
    expect(left).toEqual([]);
    const logs = await service.database.db
      .selectFrom('chat_answer_chunks')
      .select('answer_id')
      .where(
        'answer_id',
        'in',
        answers.map((answer) => answer.answer_id),
      )
      .execute();
    expect(logs).toEqual([]);
    expect((await resume('erased', 'erin')).status).toBe(204);
    expect((await resume('erased-done', 'erin')).status).toBe(204);
    expect(await history('erased', 'erin')).toBeUndefined();
  });
});
