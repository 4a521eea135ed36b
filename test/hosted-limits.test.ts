import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { type ApiProxy, type ProxyRewrite, startApiProxy } from './support/api-proxy.js';
import type { AgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ScriptedModelServer } from './support/scripted-model-server.js';
import { TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { chatBody } from './support/ui-stream.js';

/**
 * A limit the API enforces must reach the browser as the API said it: `createMordnHandler` passes
 * a 429 (chat turn) or 413 (upload) `LIMIT_REACHED` problem through with its status, media type,
 * `Retry-After` and every field, so `<MordnChat>` can name the limit and its reset. The service's
 * own refusals are checked too; exact fields and headers are pinned by a real proxy in front of it.
 */

let model: ScriptedModelServer;
let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;
let proxy: ApiProxy;
let rewrite: ProxyRewrite = () => undefined;

beforeAll(async () => {
  ({ model, service, fixture, close } = await startScriptedChatService(() => ({ text: 'Hello.' }), {
    published: { schemaVersion: 1 },
  }));
  proxy = await startApiProxy(service.url, (request, upstream) => rewrite(request, upstream));
});
afterAll(async () => {
  await proxy?.close();
  await close?.();
});
beforeEach(() => {
  rewrite = () => undefined;
  proxy.requests.length = 0;
});

const handler = (selfBaseUrl = proxy.origin) =>
  createMordnHandler({
    apiKey: fixture.key,
    getUserId: (request) => request.headers.get('x-test-session'),
    selfBaseUrl,
    streamTimeoutMs: 30_000,
  });

const chatRequest = (chatId: string) =>
  new Request('http://app.example/api/chat', {
    method: 'POST',
    headers: { 'x-test-session': 'limited-user', 'content-type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, 'hello')),
  });

const uploadRequest = () => {
  const form = new FormData();
  form.set('file', new File(['a,b\n1,2\n'], 'data.csv', { type: 'text/csv' }));
  return new Request('http://app.example/api/chat', {
    method: 'POST',
    headers: { 'x-test-session': 'limited-user' },
    body: form,
  });
};

/** Sets the fixture tenant's limits through the admin API. */
async function setTenantLimits(limits: Record<string, number | null>): Promise<void> {
  const response = await fetch(`${service.url}/v1/admin/tenants/${fixture.tenantId}/limits`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(limits),
  });
  expect(response.status).toBe(200);
}

/** A problem+json answer as the API writes it. */
function problem(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': 'req_limit_1', ...headers },
  });
}

const DAILY = {
  type: 'https://mordn.dev/problems/limit-reached',
  title: 'Limit reached',
  status: 429,
  detail: 'The tenant has used its 0 tokens per day.',
  code: 'LIMIT_REACHED',
  limit: 'tokensPerDay',
  value: 0,
  used: 0,
  resetAt: '2026-12-05T00:00:00.000Z',
  requestId: 'req_limit_1',
};

const STORAGE = {
  type: 'https://mordn.dev/problems/limit-reached',
  title: 'Limit reached',
  status: 413,
  detail: 'The upload would pass the storage limit of 1024 bytes.',
  code: 'LIMIT_REACHED',
  limit: 'storageBytes',
  value: 1024,
  used: 1000,
  resetAt: null,
  requestId: 'req_limit_1',
};

describe('createMordnHandler and LIMIT_REACHED', () => {
  it("passes a chat turn's 429 to the browser intact: status, media type, Retry-After and every field", async () => {
    rewrite = (request) => (request.path === '/v1/chat' ? problem(429, DAILY, { 'retry-after': '28800' }) : undefined);
    const response = await handler().POST(chatRequest('limited-chat'));
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toBe('28800');
    expect(response.headers.get('x-request-id')).toBe('req_limit_1');
    expect(await readJson(response)).toEqual(DAILY);
    // The turn went to the API once, as the verified user.
    const sent = proxy.requests.filter((request) => request.path === '/v1/chat');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers['x-chat-user']).toBe('limited-user');
  });

  it("passes an upload's 413 storage refusal intact, resetAt null included", async () => {
    rewrite = (request) => (request.path === '/v1/uploads' ? problem(413, STORAGE) : undefined);
    const response = await handler().POST(uploadRequest());
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await readJson(response)).toEqual(STORAGE);
    expect(proxy.requests.filter((request) => request.path === '/v1/uploads')).toHaveLength(1);
  });
});

describe('createMordnHandler and the real limits', () => {
  it("carries the service's own refusals: a chat turn over 0 tokens a day, an upload over 0 bytes", async () => {
    await setTenantLimits({ tokensPerDay: 0, storageBytes: 0 });
    const asked = model.requests.length;
    try {
      const direct = handler(service.deps.selfBaseUrl as string);
      const turn = await direct.POST(chatRequest('real-limit-chat'));
      expect(turn.status).toBe(429);
      expect(turn.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const refusal = await readJson(turn);
      expect(refusal).toMatchObject({ status: 429, code: 'LIMIT_REACHED', limit: 'tokensPerDay', value: 0 });
      // The next UTC midnight.
      const midnight = new Date();
      midnight.setUTCHours(24, 0, 0, 0);
      expect(Date.parse(refusal.resetAt)).toBe(midnight.getTime());
      expect(typeof refusal.used).toBe('number');
      expect(model.requests.length).toBe(asked);

      const upload = await direct.POST(uploadRequest());
      expect(upload.status).toBe(413);
      expect(await readJson(upload)).toMatchObject({
        status: 413,
        code: 'LIMIT_REACHED',
        limit: 'storageBytes',
        value: 0,
        resetAt: null,
      });
    } finally {
      await setTenantLimits({});
    }
  });
});
