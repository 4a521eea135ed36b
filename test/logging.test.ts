import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../src/auth/api-keys.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { adminRequest, agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';

const PROVIDER_SECRET = 'sk-provider-secret-0123456789';
let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService({
    environment: { OPENAI_API_KEY: PROVIDER_SECRET },
    extendApp: (app) => {
      // A route whose failure message carries secrets, as a careless dependency's error might.
      app.get('/test/explode', (c) => {
        throw new Error(`upstream refused ${c.req.header('Authorization')} with ${PROVIDER_SECRET}`);
      });
    },
  });
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

function parsedLogs(): Array<Record<string, unknown>> {
  return service.logs.map((line) => JSON.parse(line));
}

describe('structured logs', () => {
  it('log one line per request with its id, route pattern and status, and never the key', async () => {
    const revoked = await createApiKey(service.database.db, fixture.agentId, ['read']);
    await revokeApiKey(service.database.db, revoked.id);
    const requests = [
      service.fetch('/v1/me', { headers: { ...agentHeaders(fixture.key), 'X-Request-Id': 'trace-123' } }),
      service.fetch('/v1/me', { headers: agentHeaders(revoked.key) }),
      service.fetch('/v1/me', { headers: { Authorization: `Basic ${fixture.key}` } }),
      service.fetch(`/v1/admin/agents/${fixture.agentId}/keys`, adminRequest('POST', { permissions: ['read'] })),
    ];
    const responses = await Promise.all(requests);
    const issued = await readJson(responses[3] as Response);
    expect(responses.map((response) => response.status)).toEqual([200, 401, 401, 201]);

    const everything = service.logs.join('');
    for (const secret of [fixture.key, revoked.key, issued.key, TEST_ADMIN_TOKEN]) {
      expect(everything).not.toContain(secret);
    }
    const line = parsedLogs().find((entry) => entry.requestId === 'trace-123');
    expect(line).toMatchObject({ msg: 'request completed', method: 'GET', route: '/v1/me', status: 200 });
    expect(responses[0]?.headers.get('x-request-id')).toBe('trace-123');
  });

  it('masks unexpected errors in the body and logs them, scrubbed, with the request id', async () => {
    const response = await service.fetch('/test/explode', { headers: { Authorization: `Bearer ${fixture.key}` } });
    expect(response.status).toBe(500);
    const problem = await readJson(response);
    expect(problem).toMatchObject({ code: 'INTERNAL', status: 500 });
    expect(JSON.stringify(problem)).not.toMatch(/upstream|sk-provider|mordn_/);

    const logged = parsedLogs().find(
      (entry) => entry.msg === 'unhandled error' && entry.requestId === problem.requestId,
    );
    expect(logged).toBeDefined();
    const text = JSON.stringify(logged);
    expect(text).toContain('upstream refused');
    expect(text).not.toContain(fixture.key);
    expect(text).not.toContain(PROVIDER_SECRET);
    expect(text).toContain('[redacted]');
  });

  it('replaces an ill-formed incoming request id', async () => {
    const response = await service.fetch('/readyz', { headers: { 'X-Request-Id': 'bad id\twith spaces' } });
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
