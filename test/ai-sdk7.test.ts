import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatHandler, type HostLanguageModel } from '../src/chat/create-chat-handler.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import type { AgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { findAiSdk7 } from './support/mcp-interop-install.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn, ScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';
import { PNG_1X1, upload } from './support/upload.js';

/**
 * Hosts and clients on the AI SDK 7 line (`ai@7`, Node >= 22; installed outside the repository by
 * `scripts/mcp-clients.sh`). A model of `ai@7`'s providers (specification v4) handed to
 * `createChatHandler` runs a whole turn — an image in the prompt, two sandbox tool calls, a
 * published file, text — exactly as a model of `ai@6`'s providers does; and `ai@7`'s own chat
 * client (`AbstractChat` + `DefaultChatTransport`, what its `useChat` wraps) holds turns against
 * `POST /v1/chat`, every chunk valid against its `uiMessageChunkSchema`. Both models talk to the
 * same scripted OpenAI-compatible server over HTTP. The database is not what this tests, so it
 * runs in the SQLite project only; on Node 20 the AI SDK 7 cases skip (the `ai@6` host case runs).
 */

const SQLITE_PROJECT = (process.env.MORDN_TEST_DATABASE ?? 'sqlite') === 'sqlite';
const found = SQLITE_PROJECT ? findAiSdk7() : { reason: 'runs in the SQLite project only' };
const v7 = 'install' in found ? found.install : undefined;
if ('reason' in found && SQLITE_PROJECT) console.warn(`Skipping the AI SDK 7 host and client: ${found.reason}`);

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

/** A turn whose last user message says MAKE-CSV writes report.csv, publishes it, then says so. */
function script(request: ChatCompletionRequest): ModelTurn {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  if (!JSON.stringify(request.messages[lastUser]).includes('MAKE-CSV')) return { text: 'Hello again.' };
  const step = request.messages.slice(lastUser).filter((message) => message.role === 'tool').length;
  const steps: ModelTurn[] = [
    {
      toolCalls: [
        { name: 'sandbox_write_file', arguments: { path: 'report.csv', content: 'region,total\nnorth,3\n' } },
      ],
    },
    { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'report.csv' } }] },
  ];
  return steps[step] ?? { text: 'Published report.csv.' };
}

let model: ScriptedModelServer;
let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ model, service, fixture, close } = await startScriptedChatService(script, {
    environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
  }));
});
afterAll(() => close?.());

/** The chunk types of an answer, in order, without repeats of a kind in a row (deltas vary). */
const shape = (chunks: UIMessageChunk[]) =>
  chunks.map((chunk) => chunk.type).filter((type, index, all) => index === 0 || all[index - 1] !== type);

/** The last user message's content of a model request. */
const lastUserContent = (request: ChatCompletionRequest) =>
  request.messages.filter((message) => message.role === 'user').at(-1)?.content;

/** A host's `createChatHandler` with `hostModel`, storing where the service stores, with hosted sandboxes. */
function hostHandler(hostModel: HostLanguageModel, userId: string) {
  const agent = { tenantId: fixture.tenantId, agentId: fixture.agentId };
  return createChatHandler({
    getUserId: () => userId,
    model: hostModel,
    ...serviceChatStorage(service, agent, `host-${userId}`),
    getHostedConfig: async () => ENABLED,
    sandboxes: createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: service.deps.selfBaseUrl as string }),
  });
}

/** One whole host turn: a PNG attached, MAKE-CSV asked; the chunks and the model requests it made. */
async function hostTurn(hostModel: HostLanguageModel, userId: string) {
  const uploaded = await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'chart.png' }, userId);
  expect(uploaded.status).toBe(201);
  const png = (await readJson(uploaded)) as { storagePath: string; filename: string; mediaType: string };
  const first = model.requests.length;
  const handler = hostHandler(hostModel, userId);
  const response = await handler.POST(
    new Request('http://app.example/api/chat', {
      method: 'POST',
      body: JSON.stringify(chatBody(`turn-${userId}`, 'MAKE-CSV from this chart', [png])),
    }),
  );
  expect(response.status).toBe(200);
  const chunks = await readUiChunks(response);
  const history = await readJson(
    await handler.GET(new Request(`http://app.example/api/chat?chatId=turn-${userId}`, { method: 'GET' })),
  );
  return { chunks, requests: model.requests.slice(first), history };
}

function expectWholeTurn(turn: Awaited<ReturnType<typeof hostTurn>>) {
  const { chunks, requests, history } = turn;
  expect(chunks.filter((chunk) => chunk.type === 'error')).toEqual([]);
  // Three model calls: write, publish, answer; the image went in as its bytes.
  expect(requests).toHaveLength(3);
  const image = (lastUserContent(requests[0] as ChatCompletionRequest) as Array<Record<string, unknown>>).find(
    (part) => part.type === 'image_url',
  ) as { image_url: { url: string } } | undefined;
  expect(image?.image_url.url).toBe(`data:image/png;base64,${Buffer.from(PNG_1X1).toString('base64')}`);
  // Each tool's result went back to the model.
  const toolMessages = (requests[2] as ChatCompletionRequest).messages.filter((message) => message.role === 'tool');
  expect(toolMessages).toHaveLength(2);
  expect(JSON.stringify(toolMessages[1])).toContain('report.csv');
  const calls = chunks.filter((chunk) => chunk.type === 'tool-input-available').map((chunk) => chunk.toolName);
  expect(calls).toEqual(['sandbox_write_file', 'sandbox_publish_file']);
  expect(chunks.filter((chunk) => chunk.type === 'tool-output-available')).toHaveLength(2);
  const files = chunks.filter((chunk) => chunk.type === 'file');
  expect(files).toEqual([expect.objectContaining({ mediaType: 'text/csv' })]);
  const text = chunks.map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : '')).join('');
  expect(text).toBe('Published report.csv.');
  expect(chunks.at(-1)?.type).toBe('finish');
  // The answer was stored whole: its file card and its text.
  const reply = history.messages.at(-1);
  expect(reply.role).toBe('assistant');
  expect(reply.parts.filter((part: { type: string }) => part.type === 'file')).toEqual([
    expect.objectContaining({ filename: 'report.csv', mediaType: 'text/csv' }),
  ]);
}

describe.skipIf(!SQLITE_PROJECT)('createChatHandler with models of both AI SDK lines', () => {
  let v6Shape: string[] | undefined;

  it('runs a whole turn with an ai@6 provider model (specification v3)', async () => {
    const provider = createOpenAICompatible({ name: 'scripted', baseURL: model.baseUrl, includeUsage: true });
    const turn = await hostTurn(provider('scripted-1'), 'host-v6');
    expectWholeTurn(turn);
    v6Shape = shape(turn.chunks);
  });

  it.skipIf(v7 === undefined)(
    'runs the same whole turn with an ai@7 provider model (specification v4), chunk for chunk',
    async () => {
      const { createOpenAICompatible: createV7 } = (await import(
        v7?.entry('@ai-sdk/openai-compatible') as string
      )) as typeof import('@ai-sdk/openai-compatible');
      const provider = createV7({ name: 'scripted', baseURL: model.baseUrl, includeUsage: true });
      const v7Model = provider('scripted-1') as unknown as { specificationVersion: string };
      expect(v7Model.specificationVersion).toBe('v4');
      const turn = await hostTurn(v7Model as HostLanguageModel, 'host-v7');
      expectWholeTurn(turn);
      expect(shape(turn.chunks)).toEqual(v6Shape);
    },
  );
});

describe.skipIf(!SQLITE_PROJECT || v7 === undefined)("ai@7's chat client against POST /v1/chat", () => {
  it('holds two turns (tool calls, a published file, text), every chunk valid for ai@7', async () => {
    type Ai7 = typeof import('ai');
    const ai7 = (await import(v7?.entry('ai') as string)) as Ai7;
    const { safeValidateTypes } = (await import(
      v7?.entry('@ai-sdk/provider-utils') as string
    )) as typeof import('@ai-sdk/provider-utils');

    const bodies: Array<Promise<string>> = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      bodies.push(response.clone().text());
      return response;
    };
    let messages: import('ai').UIMessage[] = [];
    const state = {
      status: 'ready' as import('ai').ChatStatus,
      error: undefined as Error | undefined,
      get messages() {
        return messages;
      },
      set messages(next) {
        messages = next;
      },
      pushMessage: (message: import('ai').UIMessage) => {
        messages = [...messages, message];
      },
      popMessage: () => {
        messages = messages.slice(0, -1);
      },
      replaceMessage: (index: number, message: import('ai').UIMessage) => {
        messages = [...messages.slice(0, index), message, ...messages.slice(index + 1)];
      },
      snapshot: <T>(thing: T): T => structuredClone(thing),
    };
    class Chat extends ai7.AbstractChat<import('ai').UIMessage> {}
    const chat = new Chat({
      id: 'v7-client',
      state,
      transport: new ai7.DefaultChatTransport({
        api: `${service.url}/v1/chat`,
        headers: agentHeaders(fixture.key, 'v7-client'),
        fetch: recordingFetch,
      }),
    });

    await chat.sendMessage({ text: 'MAKE-CSV please' });
    expect(chat.error).toBeUndefined();
    expect(chat.status).toBe('ready');
    const reply = chat.messages.at(-1);
    expect(reply?.role).toBe('assistant');
    // The service's sandbox tools arrive as dynamic tools, each finished with its output.
    const tools = (reply?.parts ?? []).filter((part) => part.type === 'dynamic-tool');
    expect(tools.map((part) => [part.toolName, part.state])).toEqual([
      ['sandbox_write_file', 'output-available'],
      ['sandbox_publish_file', 'output-available'],
    ]);
    expect(reply?.parts.filter((part) => part.type === 'file')).toEqual([
      expect.objectContaining({ mediaType: 'text/csv' }),
    ]);
    expect(reply?.parts.filter((part) => part.type === 'text').map((part) => part.text)).toEqual([
      'Published report.csv.',
    ]);

    await chat.sendMessage({ text: 'Anything else?' });
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(
      chat.messages
        .at(-1)
        ?.parts.filter((part) => part.type === 'text')
        .map((part) => part.text),
    ).toEqual(['Hello again.']);

    // Every chunk of both answers is one ai@7 accepts.
    const chunks = (await Promise.all(bodies)).flatMap((text) =>
      text
        .split('\n\n')
        .map((event) => event.trim())
        .filter((event) => event.startsWith('data: ') && event !== 'data: [DONE]')
        .map((event) => JSON.parse(event.slice('data: '.length)) as unknown),
    );
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks) {
      const result = await safeValidateTypes({ value: chunk, schema: ai7.uiMessageChunkSchema });
      expect(result.success, JSON.stringify(chunk)).toBe(true);
    }

    // The service kept the same history the client shows.
    const stored = await readJson(
      await service.fetch('/v1/chats/v7-client', { headers: agentHeaders(fixture.key, 'v7-client') }),
    );
    expect(stored.messages.map((message: { role: string }) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  });
});
