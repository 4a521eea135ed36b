import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { type RunningServer, startServer } from '../src/server.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { sdkChat } from './support/sdk-chat.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * `createMordnHandler` and resumable answers: it passes the browser's `X-Chat-Resumable: 1` on,
 * forwards `POST …/:chatId/stop` and passes a running answer's replay through. The "API" is a
 * recording server in front of the real service: it answers stop (204, the API's contract) and
 * one running answer's replay itself, and hands every other request to the service.
 */

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const RUNNING_CHAT = 'running';
/** A complete answer as the API replays it: the assistant message from its first chunk. */
const REPLAY = [
  { type: 'start', messageId: 'msg-answer' },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: 'Still ' },
  { type: 'text-delta', id: 't1', delta: 'answering.' },
  { type: 'text-end', id: 't1' },
  { type: 'finish' },
]
  .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
  .join('');

let service: TestService;
let fixture: AgentFixture;
let api: Server;
let host: RunningServer;
let signedOut: RunningServer;
const received: Received[] = [];

function startRecordingApi(): Promise<Server> {
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const url = request.url ?? '';
    const method = request.method ?? 'GET';
    received.push({ method, url, headers: request.headers, body });
    if (method === 'POST' && /^\/v1\/chat\/[^/]+\/stop$/.test(url)) return response.writeHead(204).end();
    if (url === `/v1/chat/${RUNNING_CHAT}/stream`) {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' });
      return response.end(REPLAY);
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(name))
        headers.set(name, value);
    }
    const answer = await fetch(`${service.url}${url}`, { method, headers, ...(body ? { body } : {}) });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function serve(getUserId: () => string | null): Promise<RunningServer> {
  const { port } = api.address() as AddressInfo;
  const handler = createMordnHandler({ apiKey: fixture.key, selfBaseUrl: `http://127.0.0.1:${port}`, getUserId });
  return startServer({
    host: '127.0.0.1',
    port: 0,
    fetch: (request) => (request.method === 'GET' ? handler.GET(request) : handler.POST(request)),
  });
}

beforeAll(async () => {
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
  api = await startRecordingApi();
  host = await serve(() => 'alice');
  signedOut = await serve(() => null);
});
afterAll(async () => {
  await host?.close(1_000);
  await signedOut?.close(1_000);
  await new Promise((resolve) => api?.close(resolve));
  await service?.close();
});
beforeEach(() => {
  received.length = 0;
});

/** A chat turn as useChat sends it, with `resumable` as the X-Chat-Resumable header when given. */
function chatTurn(origin: string, resumable?: string): Promise<Response> {
  return fetch(`${origin}/api/chat`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      ...(resumable === undefined ? {} : { 'X-Chat-Resumable': resumable }),
    },
    body: JSON.stringify({
      id: 'chat-1',
      trigger: 'submit-message',
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Hello' }] }],
    }),
  });
}

describe('createMordnHandler: resumable answers', () => {
  it('forwards POST …/:chatId/stop as POST /v1/chat/:chatId/stop with the key and user, and passes the 204', async () => {
    const chatId = 'chat/ä 1';
    const response = await fetch(`${host.url}/api/chat/${encodeURIComponent(chatId)}/stop`, { method: 'POST' });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      method: 'POST',
      url: `/v1/chat/${encodeURIComponent(chatId)}/stop`,
      body: '',
      headers: { authorization: `Bearer ${fixture.key}`, 'x-chat-user': 'alice' },
    });
  });

  it('takes a stop with an empty JSON body for a stop, not for a chat turn', async () => {
    const response = await fetch(`${host.url}/api/chat/chat-2/stop`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '',
    });
    expect(response.status).toBe(204);
    expect(received.map(({ method, url }) => `${method} ${url}`)).toEqual(['POST /v1/chat/chat-2/stop']);
  });

  it('passes X-Chat-Resumable on a chat turn only when it is exactly 1', async () => {
    for (const value of ['1', 'yes', 'true', undefined]) await (await chatTurn(host.url, value)).arrayBuffer();
    expect(received.map(({ method, url }) => `${method} ${url}`)).toEqual(Array(4).fill('POST /v1/chat'));
    expect(received.map(({ headers }) => headers['x-chat-resumable'])).toEqual(['1', undefined, undefined, undefined]);
  });

  it('refuses a chat id that does not decode with a 400 problem, and asks the API nothing', async () => {
    for (const path of ['/api/chat/%E0%A4%A/stop', '/api/chat/%ZZ/stream']) {
      const response = await fetch(`${host.url}${path}`, { method: path.endsWith('/stop') ? 'POST' : 'GET' });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await response.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    }
    expect(received).toEqual([]);
  });

  it('refuses a visitor who is not signed in, and asks the API nothing', async () => {
    expect((await fetch(`${signedOut.url}/api/chat/chat-1/stop`, { method: 'POST' })).status).toBe(401);
    expect((await chatTurn(signedOut.url, '1')).status).toBe(401);
    expect((await fetch(`${signedOut.url}/api/chat/chat-1/stream`)).status).toBe(401);
    expect(received).toEqual([]);
  });

  it("passes a running answer's replay through to useChat's resume, and the service's 204 when nothing runs", async () => {
    const chat = sdkChat({ id: RUNNING_CHAT, api: `${host.url}/api/chat` });
    await chat.resumeStream();
    expect(chat.status).toBe('ready');
    expect(chat.messages).toMatchObject([
      { id: 'msg-answer', role: 'assistant', parts: [{ type: 'text', text: 'Still answering.' }] },
    ]);

    const idle = await fetch(`${host.url}/api/chat/idle-chat/stream`);
    expect(idle.status).toBe(204);
    expect(received.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `GET /v1/chat/${RUNNING_CHAT}/stream`,
      'GET /v1/chat/idle-chat/stream',
    ]);
  });
});
