import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatHandler } from '../src/chat/create-chat-handler.js';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { type RunningServer, startServer } from '../src/server.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { sdkChat } from './support/sdk-chat.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { stallingModel } from './support/stalling-model.js';

/**
 * `useChat({ resume: true })` asks `GET ${api}/${chatId}/stream` when it mounts. Answers are not
 * resumable, so every layer says "nothing to resume" with a 204 — which the AI SDK client takes
 * as such — instead of a 404 that would put it into its error state.
 */

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  // No model configured: saying there is nothing to resume needs none.
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

type Handler = { GET(request: Request): Promise<Response>; POST(request: Request): Promise<Response> };

function serve(handler: Handler): Promise<RunningServer> {
  return startServer({
    host: '127.0.0.1',
    port: 0,
    fetch: (request) => (request.method === 'GET' ? handler.GET(request) : handler.POST(request)),
  });
}

/** Resumes chat `chatId` with the AI SDK's own client and returns the state it settles in. */
async function resumeWithSdk(api: string, chatId: string, headers?: Record<string, string>) {
  const chat = sdkChat({ id: chatId, api, ...(headers ? { headers } : {}) });
  await chat.resumeStream();
  return { status: chat.status, error: chat.error?.message, messages: chat.messages };
}

describe('GET /v1/chat/:chatId/stream', () => {
  it('answers 204 with no body, even for a chat that does not exist yet', async () => {
    const response = await service.fetch('/v1/chat/never-started/stream', {
      headers: agentHeaders(fixture.key, 'alice'),
    });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  it('leaves the AI SDK client ready, not in its error state', async () => {
    expect(await resumeWithSdk(`${service.url}/v1/chat`, 'chat-1', agentHeaders(fixture.key, 'alice'))).toEqual({
      status: 'ready',
      error: undefined,
      messages: [],
    });
  });

  it('still needs a key', async () => {
    const response = await service.fetch('/v1/chat/chat-1/stream', { headers: { 'X-Chat-User': 'alice' } });
    expect(response.status).toBe(401);
  });
});

describe('createMordnHandler', () => {
  let host: RunningServer;
  let signedOut: RunningServer;
  beforeAll(async () => {
    const options = { apiKey: fixture.key, selfBaseUrl: new URL(service.url).origin };
    host = await serve(createMordnHandler({ ...options, getUserId: () => 'alice' }));
    signedOut = await serve(createMordnHandler({ ...options, getUserId: () => null }));
  });
  afterAll(async () => {
    await host.close(1_000);
    await signedOut.close(1_000);
  });

  it("passes the API's 204 through to useChat's resume request", async () => {
    const response = await fetch(`${host.url}/api/chat/chat-2/stream`);
    expect(response.status).toBe(204);
    expect(await resumeWithSdk(`${host.url}/api/chat`, 'chat-2')).toMatchObject({ status: 'ready', error: undefined });
  });

  it('refuses a visitor who is not signed in', async () => {
    expect((await fetch(`${signedOut.url}/api/chat/chat-2/stream`)).status).toBe(401);
  });
});

describe('createChatHandler', () => {
  it('answers the resume request of a signed-in user with 204, and 401 otherwise', async () => {
    const agent = await createAgentFixture(service.database.db);
    const server = await serve(
      createChatHandler({
        getUserId: (request) => request.headers.get('x-user'),
        model: stallingModel([]).model,
        store: createDatabaseChatStore(service.database.db, agent),
        storage: { resign: async () => new Map(), delete: async () => undefined },
        getHostedConfig: async () => ({ schemaVersion: 1 }),
      }),
    );
    try {
      expect(await resumeWithSdk(`${server.url}/api/chat`, 'chat-3', { 'x-user': 'alice' })).toMatchObject({
        status: 'ready',
        error: undefined,
      });
      expect((await fetch(`${server.url}/api/chat/chat-3/stream`)).status).toBe(401);
      // A history request on a route that happens to end in /stream is still a history request.
      const history = await fetch(`${server.url}/api/stream?chatId=chat-3`, { headers: { 'x-user': 'alice' } });
      expect(history.status).toBe(404);
    } finally {
      await server.close(1_000);
    }
  });
});
