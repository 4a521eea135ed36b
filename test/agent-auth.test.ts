import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentAuth } from '../src/http/auth-middleware.js';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

let service: TestService;
let fixture: AgentFixture;
/** Every principal the write probe let through, in order. */
const probeCalls: string[] = [];

beforeAll(async () => {
  service = await startTestService({
    extendApp: (app, database) => {
      // A write route guarded like the sandbox routes will be, to exercise the middleware alone.
      app.post('/test/write-probe', agentAuth(database.db, 'write', { rejectAnonymous: true }), (c) => {
        probeCalls.push(c.get('principal').userId);
        return c.json({ ok: true });
      });
    },
  });
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

describeAgentAuth({ method: 'GET', path: '/v1/me', permission: 'read' }, () => ({ service, fixture }));

describeAgentAuth(
  {
    method: 'POST',
    path: '/test/write-probe',
    permission: 'write',
    rejectsAnonymous: true,
    effects: async () => [...probeCalls],
  },
  () => ({ service, fixture }),
);

describe('GET /v1/me', () => {
  it('answers with the scope of the key and the verified user, exactly as sent', async () => {
    const response = await service.fetch('/v1/me', { headers: agentHeaders(fixture.key, 'Alice@Example.com') });
    expect(response.status).toBe(200);
    expect(await readJson(response)).toEqual({
      tenantId: fixture.tenantId,
      agentId: fixture.agentId,
      userId: 'Alice@Example.com',
      permissions: ['read', 'write'],
    });
  });

  it('reports the permissions of a read-only key', async () => {
    const response = await service.fetch('/v1/me', { headers: agentHeaders(fixture.readKey) });
    expect((await readJson(response)).permissions).toEqual(['read']);
  });

  it('keys of two agents never see each other', async () => {
    const other = await createAgentFixture(service.database.db);
    const response = await service.fetch('/v1/me', { headers: agentHeaders(other.key) });
    const body = await readJson(response);
    expect(body.agentId).toBe(other.agentId);
    expect(body.tenantId).not.toBe(fixture.tenantId);
  });
});

describe('write probe', () => {
  it('lets a read+write key with a signed-in user through', async () => {
    const response = await service.fetch('/test/write-probe', {
      method: 'POST',
      headers: agentHeaders(fixture.key, 'user-7'),
    });
    expect(response.status).toBe(200);
    expect(probeCalls.at(-1)).toBe('user-7');
  });
});
