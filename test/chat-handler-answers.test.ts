import type { UIMessage } from 'ai';
import { DefaultChatTransport } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnswerStore } from '../src/chat/answer-store.js';
import { type ChatHandler, createChatHandler } from '../src/chat/create-chat-handler.js';
import { createMemoryAnswerStore } from '../src/chat/memory-answer-store.js';
import { type RunningServer, startServer } from '../src/server.js';
import { createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { SdkChat } from './support/sdk-chat.js';
import { startTestService, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import { FINISH_USAGE, type LanguageModelV3StreamPart } from './support/stalling-model.js';

/**
 * `createChatHandler` in a host process with a store of its own (`createMemoryAnswerStore`, the
 * public `AnswerStore` interface): the AI SDK's own client resumes after a "reload" and rebuilds
 * the same message, `POST …/:chatId/stop` stops the answer (the model sees its abort), and a host
 * without a store keeps the old behaviour.
 */

let service: TestService;
const aborted: string[] = [];

/** Streams `Word 0. Word 1. …` (30 deltas, 50 ms apart), ending early with the call's abort. */
function slowModel() {
  return new MockLanguageModelV3({
    doStream: async (options) => {
      const signal = options.abortSignal;
      signal?.addEventListener('abort', () => aborted.push(JSON.stringify(options.prompt).slice(-60)), { once: true });
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          for (let index = 0; index < 30; index++) {
            if (signal?.aborted) {
              controller.error(signal.reason);
              return;
            }
            controller.enqueue({ type: 'text-delta', id: 't', delta: `Word ${index}. ` });
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: FINISH_USAGE });
          controller.close();
        },
      });
      return { stream };
    },
  });
}

async function startHost(answers: { store: AnswerStore } | undefined) {
  const agent = await createAgentFixture(service.database.db);
  const chat: ChatHandler = createChatHandler({
    getUserId: (request) => request.headers.get('x-user'),
    model: slowModel(),
    ...serviceChatStorage(service, agent, 'host'),
    getHostedConfig: async () => ({ schemaVersion: 1 }),
    coalesceMs: 0,
    ...(answers ? { answers } : {}),
  });
  const server: RunningServer = await startServer({
    host: '127.0.0.1',
    port: 0,
    fetch: (request) => (request.method === 'POST' ? chat.POST(request) : chat.GET(request)),
  });
  return server;
}

beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

function sdk(url: string, id: string, user: string, messages: UIMessage[] = []) {
  return new SdkChat({
    id,
    messages,
    transport: new DefaultChatTransport({
      api: `${url}/api/chat`,
      headers: { 'x-user': user, 'X-Chat-Resumable': '1' },
    }),
  });
}

/** The text of a message's first text part ('' without one). */
function textOf(message: UIMessage | undefined): string {
  const part = message?.parts.find((each) => each.type === 'text');
  return part && 'text' in part ? part.text : '';
}

async function history(url: string, chatId: string, user = 'alice'): Promise<Json | undefined> {
  const response = await fetch(`${url}/api/chat?chatId=${chatId}`, { headers: { 'x-user': user } });
  return response.status === 200 ? readJson(response) : undefined;
}

describe('createChatHandler with a host store', () => {
  let host: RunningServer;
  beforeAll(async () => {
    host = await startHost({ store: createMemoryAnswerStore() });
  });
  afterAll(() => host.close(1_000));

  it("lets the AI SDK's client resume after a reload and rebuild the same message as a reader that never left", async () => {
    const first = sdk(host.url, 'reload', 'alice');
    const sending = first.sendMessage({ text: 'tell me' });
    await pollUntil(
      () => first.lastMessage?.parts.find((part) => part.type === 'text'),
      (part) => part !== undefined && 'text' in part && part.text.includes('Word 5.'),
      { timeoutMs: 5_000, intervalMs: 20 },
    );
    // The reload: a new client with the stored history (the question, stored as the turn started).
    const stored = await history(host.url, 'reload');
    expect(stored?.messages.map((message: Json) => message.role)).toEqual(['user']);
    const reloaded = sdk(host.url, 'reload', 'alice', stored?.messages);
    await reloaded.resumeStream();
    await sending;
    expect(reloaded.status).toBe('ready');
    expect(reloaded.messages).toEqual(first.messages);
    expect(textOf(reloaded.messages.at(-1))).toContain('Word 29.');
    const final = await pollUntil(
      () => history(host.url, 'reload'),
      (chat) => chat?.messages.length === 2,
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    expect(final?.messages.at(-1)?.id).toBe(first.messages.at(-1)?.id);
  });

  it('stops through POST …/:chatId/stop: the model sees the abort and the answer is stored as a stop', async () => {
    const before = aborted.length;
    const chat = sdk(host.url, 'host-stop', 'alice');
    const sending = chat.sendMessage({ text: 'go on' });
    await pollUntil(
      () => chat.lastMessage?.parts.find((part) => part.type === 'text'),
      (part) => part !== undefined && 'text' in part && part.text.includes('Word 3.'),
      { timeoutMs: 5_000, intervalMs: 20 },
    );
    const other = await fetch(`${host.url}/api/chat/host-stop/stop`, { method: 'POST', headers: { 'x-user': 'bob' } });
    expect(other.status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(aborted.length).toBe(before);
    const stopped = await fetch(`${host.url}/api/chat/host-stop/stop`, {
      method: 'POST',
      headers: { 'x-user': 'alice' },
    });
    expect(stopped.status).toBe(204);
    await sending;
    expect(aborted.length).toBe(before + 1);
    const stored = await pollUntil(
      () => history(host.url, 'host-stop'),
      (body) => body?.messages.at(-1)?.metadata?.mordn?.interrupted !== undefined,
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    expect(stored?.messages.at(-1)?.metadata).toEqual({ mordn: { interrupted: { reason: 'stop' } } });
  });

  it('refuses a stop or resume of a signed-out caller', async () => {
    expect((await fetch(`${host.url}/api/chat/x/stop`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${host.url}/api/chat/x/stream`)).status).toBe(401);
  });
});

describe('createChatHandler without a store', () => {
  it('keeps the old behaviour: resume is 204 even while an answer runs, and stop stops nothing', async () => {
    const host = await startHost(undefined);
    try {
      const chat = sdk(host.url, 'plain', 'alice');
      const sending = chat.sendMessage({ text: 'plain' });
      await pollUntil(
        () => chat.lastMessage?.parts.find((part) => part.type === 'text'),
        (part) => part !== undefined,
        { timeoutMs: 5_000, intervalMs: 20 },
      );
      expect((await fetch(`${host.url}/api/chat/plain/stream`, { headers: { 'x-user': 'alice' } })).status).toBe(204);
      const stop = await fetch(`${host.url}/api/chat/plain/stop`, { method: 'POST', headers: { 'x-user': 'alice' } });
      expect(stop.status).toBe(204);
      await sending;
      expect(chat.messages.at(-1)?.metadata).toBeUndefined();
      expect(textOf(chat.messages.at(-1))).toContain('Word 29.');
    } finally {
      await host.close(1_000);
    }
  });
});
