import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type Json, readJson } from './support/json.js';
import { MCP_ERAS } from './support/mcp-eras.js';
import { type ServiceReplica, startReplica } from './support/replica.js';
import { adminRequest, agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';

/**
 * Two `mordn serve` processes on one PostgreSQL schema, published under one public URL (as
 * behind a load balancer): a sandbox token minted through one is accepted by the other, and a
 * revocation made through either fails the token on the very next request through the other.
 */

const PUBLIC_URL = 'https://mordn.replicas.example';
const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let target: TestDatabaseTarget;
let a: ServiceReplica;
let b: ServiceReplica;
let agentId: string;
let key: string;

async function admin(replica: ServiceReplica, method: string, route: string, body?: unknown): Promise<Json> {
  const response = await replica.fetch(route, adminRequest(method, body));
  expect(response.status, `${method} ${route}`).toBeLessThan(300);
  return response.status === 204 ? undefined : readJson(response);
}

async function mint(replica: ServiceReplica, userId: string, agentKey = key): Promise<Json> {
  const response = await replica.fetch('/v1/sandbox/tokens', {
    method: 'POST',
    headers: { ...agentHeaders(agentKey, userId), 'Content-Type': 'application/json' },
    body: '{}',
  });
  expect(response.status).toBe(201);
  return readJson(response);
}

function revoke(replica: ServiceReplica, userId: string, tokenId?: string): Promise<Response> {
  return replica.fetch(`/v1/sandbox/tokens${tokenId === undefined ? '' : `/${tokenId}`}`, {
    method: 'DELETE',
    headers: agentHeaders(key, userId),
  });
}

beforeAll(async () => {
  target = await createTestDatabaseTarget();
  const environment = {
    ...target.environment,
    ...(process.getuid?.() === 0 ? {} : { MORDN_SANDBOX_WEAK_LIMITS: 'true' }),
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_PUBLIC_URL: PUBLIC_URL,
    MORDN_SIGNING_SECRET: 'token-replicas-shared-signing-secret-0123',
    MORDN_SANDBOX_ENABLED: 'true',
  };
  [a, b] = await Promise.all([startReplica(environment), startReplica(environment)]);
  const tenant = await admin(a, 'POST', '/v1/admin/tenants', { name: 'Replicated' });
  const agent = await admin(b, 'POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  agentId = String(agent.id);
  const issued = await admin(a, 'POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['read', 'write'] });
  key = String(issued.key);
  await admin(b, 'PUT', `/v1/admin/agents/${agentId}/config`, ENABLED);
  await admin(a, 'POST', `/v1/admin/agents/${agentId}/config/publish`);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await target?.destroy();
});

describe.each(MCP_ERAS)('sandbox tokens across two replicas: $name', (era) => {
  const discover = (replica: ServiceReplica, token: string) =>
    replica.fetch('/v1/sandbox/mcp', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...era.discovery().headers,
      },
      body: JSON.stringify(era.discovery().body),
    });

  it('accept on B a token minted on A, and list the tools through B with the real client', async () => {
    const { token } = await mint(a, 'rita');
    expect((await discover(b, token)).status).toBe(200);
    const client = await era.connect(`${b.url}/v1/sandbox/mcp`, { Authorization: `Bearer ${token}` });
    try {
      expect(await client.listToolNames()).toHaveLength(6);
    } finally {
      await client.close();
    }
  });

  it("agree on revoking one token, then all of a user's, on the very next request", async () => {
    const first = await mint(a, 'ravi');
    const second = await mint(b, 'ravi');
    expect((await discover(b, first.token)).status).toBe(200);
    expect((await revoke(b, 'ravi', first.id)).status).toBe(204);
    const refused = await discover(a, first.token);
    expect(refused.status).toBe(401);
    expect((await readJson(refused)).code).toBe('INVALID_TOKEN');
    expect(refused.headers.get('www-authenticate')).toContain(
      `resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource"`,
    );

    expect((await discover(a, second.token)).status).toBe(200);
    expect((await revoke(a, 'ravi')).status).toBe(204);
    expect((await discover(b, second.token)).status).toBe(401);
  });

  it('agree that revoking the minting agent key ends its tokens', async () => {
    const extra = await admin(b, 'POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['read', 'write'] });
    const { token } = await mint(b, 'rosa', String(extra.key));
    const kept = await mint(b, 'rosa');
    expect((await discover(a, token)).status).toBe(200);
    await admin(a, 'DELETE', `/v1/admin/keys/${extra.id}`);
    expect((await discover(b, token)).status).toBe(401);
    expect((await discover(a, token)).status).toBe(401);
    // Tokens of the agent's other keys are untouched.
    expect((await discover(b, kept.token)).status).toBe(200);
  });
});

describe('console sessions across two replicas', () => {
  it('are accepted by either replica, and a sign-out on one ends them on the other', async () => {
    const signIn = await a.fetch('/console/api/session', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: TEST_ADMIN_TOKEN }),
    });
    expect(signIn.status).toBe(200);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const { csrfToken } = await readJson(signIn);
    const headers = { Cookie: cookie, 'X-CSRF-Token': csrfToken, 'Content-Type': 'application/json' };

    expect((await b.fetch('/console/api/session', { headers })).status).toBe(200);
    const created = await b.fetch('/v1/admin/tenants', { method: 'POST', headers, body: '{"name":"Via b"}' });
    expect(created.status).toBe(201);

    expect((await b.fetch('/console/api/session', { method: 'DELETE', headers })).status).toBe(204);
    expect((await a.fetch('/console/api/session', { headers })).status).toBe(401);
    expect((await a.fetch('/v1/admin/tenants', { headers })).status).toBe(401);
  });
});
