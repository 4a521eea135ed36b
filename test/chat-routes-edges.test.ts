import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { chatBody } from './support/ui-stream.js';

const STORED: UIMessage[] = [
  { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] },
  { id: 'm2', role: 'assistant', parts: [{ type: 'text', text: 'hi there' }] },
];

async function storeChat(service: TestService, fixture: AgentFixture, chatId: string): Promise<void> {
  const store = createDatabaseChatStore(service.database.db, fixture);
  await store.saveMessages({ userId: 'user-1' }, chatId, STORED);
}

describe('chat history without a configured model', () => {
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    service = await startTestService();
    expect(service.config.model).toBeUndefined();
    fixture = await createAgentFixture(service.database.db);
    await storeChat(service, fixture, 'kept');
    await storeChat(service, fixture, 'removed');
  });
  afterAll(() => service.close());

  it('GET /v1/chats/:id answers the stored history', async () => {
    const response = await service.fetch('/v1/chats/kept', { headers: agentHeaders(fixture.key) });
    expect(response.status).toBe(200);
    expect(await readJson(response)).toEqual({ id: 'kept', messages: STORED });
  });

  it('DELETE /v1/chats/:id deletes the chat', async () => {
    const removed = await service.fetch('/v1/chats/removed', { method: 'DELETE', headers: agentHeaders(fixture.key) });
    expect(removed.status).toBe(204);
    const after = await service.fetch('/v1/chats/removed', { headers: agentHeaders(fixture.key) });
    expect(after.status).toBe(404);
    expect((await readJson(after)).code).toBe('NOT_FOUND');
  });

  it('POST /v1/chat still answers 503 MODEL_NOT_CONFIGURED, changing nothing', async () => {
    const response = await service.fetch('/v1/chat', {
      method: 'POST',
      headers: { ...agentHeaders(fixture.key), 'Content-Type': 'application/json' },
      body: JSON.stringify(chatBody('kept', 'another question')),
    });
    expect(response.status).toBe(503);
    expect((await readJson(response)).code).toBe('MODEL_NOT_CONFIGURED');
    const history = await readJson(await service.fetch('/v1/chats/kept', { headers: agentHeaders(fixture.key) }));
    expect(history.messages).toEqual(STORED);
  });
});

describe('X-Request-Id on chat errors', () => {
  let model: ScriptedModelServer;
  let service: TestService;
  let fixture: AgentFixture;
  const TRACE = 'trace-4f1c.upstream:7';

  beforeAll(async () => {
    model = await startScriptedModelServer(() => ({ text: 'hi' }));
    service = await startTestService({
      environment: { MORDN_MODEL: 'openai-compatible:scripted-1', MORDN_MODEL_BASE_URL: model.baseUrl },
    });
    fixture = await createAgentFixture(service.database.db);
  });
  afterAll(async () => {
    await service.close();
    await model.close();
  });

  const requests: Array<[string, string, RequestInit, number, string]> = [
    ['GET /v1/chats/:id of a missing chat', '/v1/chats/missing', {}, 404, 'NOT_FOUND'],
    ['DELETE /v1/chats/:id of a missing chat', '/v1/chats/missing', { method: 'DELETE' }, 404, 'NOT_FOUND'],
    [
      'POST /v1/chat with a body that is not JSON',
      '/v1/chat',
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"id":' },
      400,
      'MALFORMED_JSON',
    ],
    [
      'POST /v1/chat without a chat id',
      '/v1/chat',
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: [] }) },
      400,
      'VALIDATION_FAILED',
    ],
  ];

  it.each(requests)('%s keeps the incoming id', async (_name, path, init, status, code) => {
    const response = await service.fetch(path, {
      ...init,
      headers: { ...agentHeaders(fixture.key), ...(init.headers as Record<string, string>), 'X-Request-Id': TRACE },
    });
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('x-request-id')).toBe(TRACE);
    expect(await readJson(response)).toMatchObject({ code, requestId: TRACE });
  });

  it.each(requests)('%s names the id of its access log line when none came in', async (_name, path, init, status) => {
    const response = await service.fetch(path, {
      ...init,
      headers: { ...agentHeaders(fixture.key), ...(init.headers as Record<string, string>) },
    });
    expect(response.status).toBe(status);
    const requestId = response.headers.get('x-request-id');
    expect((await readJson(response)).requestId).toBe(requestId);
    const accessLines = service.logs
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'request completed' && line.requestId === requestId);
    expect(accessLines).toHaveLength(1);
    expect(accessLines[0].status).toBe(status);
  });
});
