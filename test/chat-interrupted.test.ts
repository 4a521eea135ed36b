import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { isToolUIPart, safeValidateUIMessages, tool, type UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type CreateChatHandlerOptions, createChatHandler } from '../src/chat/create-chat-handler.js';
import { INTERRUPTED_TOOL_ERROR } from '../src/chat/interrupted-message.js';
import { type RunningServer, startServer } from '../src/server.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ModelTurn } from './support/scripted-model-server.js';
import { sdkChat } from './support/sdk-chat.js';
import { agentHeaders, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import {
  finishPart,
  type StallingStep,
  stallingModel,
  textDelta,
  textEnd,
  textStart,
} from './support/stalling-model.js';
import { chatBody } from './support/ui-stream.js';

/**
 * An answer cut short — the client stops, its response loses its reader, the deadline passes — is
 * stored as a finished message: no part left streaming or waiting for a tool, and
 * `metadata.mordn.interrupted.reason` saying why. Every case runs over real HTTP and reads the
 * stored chat back through the history route, which the AI SDK's own validator must accept.
 */

const OPEN_STATES = new Set(['streaming', 'input-streaming', 'input-available']);

let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ service, fixture, close } = await startScriptedChatService((request): ModelTurn => {
    const answered = request.messages.some((message) => message.role === 'tool');
    if (answered) return { text: 'done' };
    // Long enough to be stopped mid-call, short enough to end on its own if the stop never came.
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: 'sleep 20', timeoutSeconds: 30 } }] };
  }));
});
afterAll(() => close());

/** No part of `message` is still open. */
function openParts(message: UIMessage) {
  return message.parts.filter((part) => 'state' in part && OPEN_STATES.has(String(part.state)));
}

/** Polls a history route until the chat's last message is an interrupted answer, then checks it is valid. */
async function interruptedAnswer(readHistory: () => Promise<Response>): Promise<UIMessage> {
  const history = await pollUntil(
    async () => {
      const response = await readHistory();
      return response.status === 200 ? readJson(response) : undefined;
    },
    (body) => body?.messages.at(-1)?.metadata?.mordn?.interrupted !== undefined,
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  expect(history?.messages.at(-1)?.metadata?.mordn?.interrupted).toBeDefined();
  const validated = await safeValidateUIMessages({ messages: history.messages });
  expect(validated.success ? undefined : validated.error).toBeUndefined();
  const answer = history.messages.at(-1) as UIMessage;
  expect(answer.role).toBe('assistant');
  expect(openParts(answer)).toEqual([]);
  return answer;
}

describe('POST /v1/chat, stopped by the AI SDK client', () => {
  it("stores the answer with its sandbox call closed and reason 'stop'", async () => {
    const chat = sdkChat({
      id: 'chat-stop',
      api: `${service.url}/v1/chat`,
      headers: agentHeaders(fixture.key, 'alice'),
    });
    const sending = chat.sendMessage({ text: 'count to a million' });
    const calling = await pollUntil(
      () => chat.lastMessage?.parts.find(isToolUIPart),
      (part) => part?.state === 'input-available',
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(calling?.state).toBe('input-available');
    await chat.stop();
    await sending;

    const answer = await interruptedAnswer(() =>
      service.fetch('/v1/chats/chat-stop', { headers: agentHeaders(fixture.key, 'alice') }),
    );
    expect(answer.metadata).toEqual({ mordn: { interrupted: { reason: 'stop' } } });
    const call = answer.parts.find(isToolUIPart);
    expect(call).toMatchObject({ type: 'dynamic-tool', toolName: 'sandbox_exec', state: 'output-error' });
    const line = await pollUntil(
      () => service.logs.map((entry) => JSON.parse(entry)).find((entry) => entry.msg === 'chat interrupted'),
      (entry) => entry !== undefined,
      { timeoutMs: 3_000 },
    );
    expect(line).toMatchObject({ level: 30, reason: 'stop' });
  });
});

/** `createChatHandler` mounted by a host on a real HTTP server, storing in the service's database. */
async function startHost(overrides: Partial<CreateChatHandlerOptions>, serve = startNodeServer) {
  const agent = await createAgentFixture(service.database.db);
  const interruptions: string[] = [];
  const chat = createChatHandler({
    getUserId: (request) => request.headers.get('x-user'),
    model: stallingModel([]).model,
    ...serviceChatStorage(service, agent, 'host'),
    getHostedConfig: async () => ({ schemaVersion: 1 }),
    onInterrupted: ({ reason }) => interruptions.push(reason),
    ...overrides,
  });
  const server = await serve((request) => (request.method === 'POST' ? chat.POST(request) : chat.GET(request)));
  return {
    url: server.url,
    interruptions,
    history: (chatId: string) => fetch(`${server.url}/chat?chatId=${chatId}`, { headers: { 'x-user': 'alice' } }),
    close: () => server.close(),
  };
}

type FetchHandler = (request: Request) => Promise<Response>;

/** A host on `@hono/node-server`, which aborts a request's signal when its client leaves. */
async function startNodeServer(handle: FetchHandler) {
  const server: RunningServer = await startServer({ host: '127.0.0.1', port: 0, fetch: handle });
  return { url: server.url, close: () => server.close(1_000) };
}

/**
 * A host whose adapter never aborts a request's signal (as Express-style adapters do): a client
 * that leaves shows only as the response body being cancelled once the socket closes.
 */
async function startSignalLessServer(handle: FetchHandler) {
  const server = http.createServer(async (incoming, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(incoming.headers))
      if (typeof value === 'string') headers.set(name, value);
    const request = new Request(`http://127.0.0.1${incoming.url}`, {
      method: incoming.method ?? 'GET',
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const response = await handle(request);
    outgoing.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) return void outgoing.end();
    const reader = response.body.getReader();
    outgoing.on('close', () => void reader.cancel().catch(() => undefined));
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) break;
      if (!outgoing.write(next.value)) await new Promise((resolve) => outgoing.once('drain', resolve));
    }
    outgoing.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Posts a chat turn on a raw socket, waits for `marker` in the answer, then vanishes. */
function postAndVanish(url: string, chatId: string, marker: string): Promise<void> {
  const { port, hostname } = new URL(url);
  const body = JSON.stringify(chatBody(chatId, 'write me a long story'));
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`"${marker}" never arrived; got ${received.slice(0, 500)}`));
    }, 10_000);
    socket.on('error', () => undefined);
    socket.on('connect', () =>
      socket.write(
        `POST /chat HTTP/1.1\r\nHost: ${hostname}:${port}\r\nx-user: alice\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      if (received.includes(marker)) {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      }
    });
  });
}

/** Text that is still being written when the answer is cut. */
const HALF_WRITTEN: StallingStep[] = [{ parts: [textStart('t'), textDelta('t', 'Once upon a ti')], stall: true }];

describe('createChatHandler in a host, cut short', () => {
  it("stores text a stopped answer was still writing as done, with reason 'stop'", async () => {
    const host = await startHost({ model: stallingModel(HALF_WRITTEN).model });
    try {
      await postAndVanish(host.url, 'host-stop', 'Once upon a ti');
      const answer = await interruptedAnswer(() => host.history('host-stop'));
      expect(answer.metadata).toEqual({ mordn: { interrupted: { reason: 'stop' } } });
      expect(answer.parts.filter((part) => part.type === 'text')).toEqual([
        expect.objectContaining({ text: 'Once upon a ti', state: 'done' }),
      ]);
      expect(host.interruptions).toEqual(['stop']);
    } finally {
      await host.close();
    }
  });

  it("stores the answer of a client that left a host without request signals with reason 'disconnect'", async () => {
    const host = await startHost({ model: stallingModel(HALF_WRITTEN).model }, startSignalLessServer);
    try {
      await postAndVanish(host.url, 'host-disconnect', 'Once upon a ti');
      const answer = await interruptedAnswer(() => host.history('host-disconnect'));
      expect(answer.metadata).toEqual({ mordn: { interrupted: { reason: 'disconnect' } } });
      expect(answer.parts.find((part) => part.type === 'text')).toMatchObject({ state: 'done' });
      expect(host.interruptions).toEqual(['disconnect']);
    } finally {
      await host.close();
    }
  });

  it("closes a tool call still waiting for its result at the deadline, with reason 'timeout'", async () => {
    const { model: toolModel } = stallingModel([
      {
        parts: [
          textStart('t'),
          textDelta('t', 'Looking it up.'),
          textEnd('t'),
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'lookup', input: '{"q":"weather"}' },
          finishPart('tool-calls'),
        ],
      },
    ]);
    const host = await startHost({
      model: toolModel,
      streamTimeoutMs: 1_000,
      buildExtraTools: async () => ({
        tools: {
          // A slow lookup that ignores the abort: the answer must end at the deadline regardless.
          lookup: tool({ inputSchema: z.object({ q: z.string() }), execute: () => new Promise<string>(() => {}) }),
        },
        close: async () => undefined,
      }),
    });
    try {
      const started = Date.now();
      const response = await fetch(`${host.url}/chat`, {
        method: 'POST',
        headers: { 'x-user': 'alice', 'Content-Type': 'application/json' },
        body: JSON.stringify(chatBody('host-timeout', 'what is the weather?')),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(Date.now() - started).toBeLessThan(8_000);
      expect(text).toContain('took too long');

      const answer = await interruptedAnswer(() => host.history('host-timeout'));
      expect(answer.metadata).toEqual({ mordn: { interrupted: { reason: 'timeout' } } });
      expect(answer.parts.find(isToolUIPart)).toMatchObject({
        toolCallId: 'call-1',
        state: 'output-error',
        errorText: INTERRUPTED_TOOL_ERROR,
        input: { q: 'weather' },
      });
      expect(answer.parts.find((part) => part.type === 'text')).toMatchObject({ text: 'Looking it up.' });
      expect(host.interruptions).toEqual(['timeout']);
    } finally {
      await host.close();
    }
  });

  it('closes a tool call whose input was still streaming', async () => {
    const { model: streamingInput } = stallingModel([
      {
        parts: [
          { type: 'tool-input-start', id: 'call-2', toolName: 'lookup' },
          { type: 'tool-input-delta', id: 'call-2', delta: '{"q":"wea' },
        ],
        stall: true,
      },
    ]);
    const host = await startHost({
      model: streamingInput,
      buildExtraTools: async () => ({
        tools: { lookup: tool({ inputSchema: z.object({ q: z.string() }), execute: async () => 'sunny' }) },
        close: async () => undefined,
      }),
    });
    try {
      await postAndVanish(host.url, 'host-input', '"toolCallId":"call-2"');
      const answer = await interruptedAnswer(() => host.history('host-input'));
      expect(answer.parts.find(isToolUIPart)).toMatchObject({
        toolCallId: 'call-2',
        state: 'output-error',
        errorText: INTERRUPTED_TOOL_ERROR,
      });
    } finally {
      await host.close();
    }
  });
});
