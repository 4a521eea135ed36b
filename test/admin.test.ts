import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from './support/http.js';
import { readJson } from './support/json.js';
import { adminRequest, agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

async function admin(method: string, path: string, body?: unknown) {
  const response = await service.fetch(path, adminRequest(method, body));
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type'), body: text ? JSON.parse(text) : null };
}

async function countRows(table: 'tenants' | 'agents' | 'api_keys' | 'agent_configs'): Promise<number> {
  const row = await service.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

async function createAgent() {
  const tenant = await admin('POST', '/v1/admin/tenants', { name: 'Acme' });
  const agent = await admin('POST', `/v1/admin/tenants/${tenant.body.id}/agents`, { name: 'Support bot' });
  return { tenantId: tenant.body.id as string, agentId: agent.body.id as string };
}

describe('admin API shapes (DESIGN §7)', () => {
  it('creates a tenant: 201 {id, name}', async () => {
    const response = await admin('POST', '/v1/admin/tenants', { name: 'Acme' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({ id: expect.stringMatching(/^ten_[0-9a-f]{24}$/), name: 'Acme' });
  });

  it('creates an agent: 201 {id, tenantId, name}', async () => {
    const tenant = await admin('POST', '/v1/admin/tenants', { name: 'Acme' });
    const response = await admin('POST', `/v1/admin/tenants/${tenant.body.id}/agents`, { name: 'Bot' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^agt_[0-9a-f]{24}$/),
      tenantId: tenant.body.id,
      name: 'Bot',
    });
  });

  it('issues a key: 201 {id, key, permissions}; the key is stored only as a hash', async () => {
    const { agentId } = await createAgent();
    const response = await admin('POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['write', 'read'] });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^mordn_[A-Za-z0-9_-]{43}$/),
      permissions: ['read', 'write'],
    });
    const rows = await service.database.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', response.body.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(response.body.key);
    expect(rows[0]?.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('lists key metadata without the key', async () => {
    const { agentId } = await createAgent();
    const issued = await admin('POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['read'] });
    const response = await admin('GET', `/v1/admin/agents/${agentId}/keys`);
    expect(response.status).toBe(200);
    expect(response.body.keys).toEqual([
      {
        id: issued.body.id,
        prefix: issued.body.key.slice(0, 12),
        permissions: ['read'],
        createdAt: expect.any(String),
        revokedAt: null,
      },
    ]);
    expect(JSON.stringify(response.body)).not.toContain(issued.body.key);
  });

  it('revokes a key: 204, and the key fails from the next request on', async () => {
    const { agentId } = await createAgent();
    const issued = await admin('POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['read', 'write'] });
    const before = await service.fetch('/v1/me', { headers: agentHeaders(issued.body.key) });
    expect(before.status).toBe(200);

    const revoked = await service.fetch(`/v1/admin/keys/${issued.body.id}`, adminRequest('DELETE'));
    expect(revoked.status).toBe(204);
    expect(await revoked.text()).toBe('');

    const after = await service.fetch('/v1/me', { headers: agentHeaders(issued.body.key) });
    expect(after.status).toBe(401);
    expect((await readJson(after)).code).toBe('INVALID_API_KEY');
    expect((await admin('DELETE', `/v1/admin/keys/${issued.body.id}`)).status).toBe(204);
    const listed = await admin('GET', `/v1/admin/agents/${agentId}/keys`);
    expect(listed.body.keys[0].revokedAt).toEqual(expect.any(String));
  });

  it('keeps draft and published apart: PUT → {draft}, publish → {published}, GET → both', async () => {
    const { agentId } = await createAgent();
    const first = { schemaVersion: 1, instructions: 'Be brief.', runtime: { sandbox: { enabled: false } } };
    expect(await admin('GET', `/v1/admin/agents/${agentId}/config`)).toMatchObject({
      status: 200,
      body: { draft: null, published: null },
    });

    const put = await admin('PUT', `/v1/admin/agents/${agentId}/config`, first);
    expect(put).toMatchObject({ status: 200, body: { draft: first } });
    expect((await admin('GET', `/v1/admin/agents/${agentId}/config`)).body).toEqual({ draft: first, published: null });

    const published = await admin('POST', `/v1/admin/agents/${agentId}/config/publish`);
    expect(published).toMatchObject({ status: 200, body: { published: first } });

    const second = { schemaVersion: 1, model: 'gpt-4.1-mini', runtime: { sandbox: { enabled: true } } };
    await admin('PUT', `/v1/admin/agents/${agentId}/config`, second);
    expect((await admin('GET', `/v1/admin/agents/${agentId}/config`)).body).toEqual({
      draft: second,
      published: first,
    });

    await admin('POST', `/v1/admin/agents/${agentId}/config/publish`);
    expect((await admin('GET', `/v1/admin/agents/${agentId}/config`)).body).toEqual({
      draft: second,
      published: second,
    });
  });
});

describe('admin API refusals', () => {
  it('rejects runtime.sandbox.provider with 400 naming the key, and stores nothing', async () => {
    const { agentId } = await createAgent();
    const response = await admin('PUT', `/v1/admin/agents/${agentId}/config`, {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true, provider: 'blaxel' } },
    });
    expect(response.status).toBe(400);
    expect(response.type).toBe('application/problem+json');
    expect(response.body.code).toBe('VALIDATION_FAILED');
    expect(response.body.detail).toContain('runtime.sandbox.provider');
    expect(response.body.errors).toContainEqual({
      path: 'runtime.sandbox.provider',
      message: 'is not a recognized key',
    });
    expect((await admin('GET', `/v1/admin/agents/${agentId}/config`)).body).toEqual({ draft: null, published: null });
  });

  it.each([
    ['a credential', { schemaVersion: 1, apiKey: 'sk-123' }, 'apiKey'],
    ['a workspace id', { schemaVersion: 1, runtime: { workspaceId: 'w1' } }, 'runtime.workspaceId'],
    ['a BYO selector', { schemaVersion: 1, runtime: { sandbox: { enabled: true, byo: true } } }, 'runtime.sandbox.byo'],
    ['a scope', { schemaVersion: 1, attachments: { scope: 'tenant' } }, 'attachments.scope'],
    ['schemaVersion 2', { schemaVersion: 2 }, 'schemaVersion'],
    [
      'a non-boolean enabled',
      { schemaVersion: 1, runtime: { sandbox: { enabled: 'yes' } } },
      'runtime.sandbox.enabled',
    ],
  ])('rejects %s with 400 naming %s', async (_name, config, path) => {
    const { agentId } = await createAgent();
    const response = await admin('PUT', `/v1/admin/agents/${agentId}/config`, config);
    expect(response.status).toBe(400);
    expect(response.body.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('a draft never changes what published returns', async () => {
    const { agentId } = await createAgent();
    const published = { schemaVersion: 1, runtime: { sandbox: { enabled: false } } };
    await admin('PUT', `/v1/admin/agents/${agentId}/config`, published);
    await admin('POST', `/v1/admin/agents/${agentId}/config/publish`);
    await admin('PUT', `/v1/admin/agents/${agentId}/config`, {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true } },
    });
    await admin('PUT', `/v1/admin/agents/${agentId}/config`, { schemaVersion: 1, instructions: 'changed twice' });
    expect((await admin('GET', `/v1/admin/agents/${agentId}/config`)).body.published).toEqual(published);
  });

  it('publishing without a draft is 409 NO_DRAFT_CONFIG', async () => {
    const { agentId } = await createAgent();
    const response = await admin('POST', `/v1/admin/agents/${agentId}/config/publish`);
    expect(response).toMatchObject({ status: 409, body: { code: 'NO_DRAFT_CONFIG' } });
  });

  it.each([
    ['POST', '/v1/admin/tenants/ten_000000000000000000000000/agents', { name: 'x' }],
    ['POST', '/v1/admin/agents/agt_000000000000000000000000/keys', { permissions: ['read'] }],
    ['GET', '/v1/admin/agents/agt_000000000000000000000000/keys', undefined],
    ['DELETE', '/v1/admin/keys/key_000000000000000000000000', undefined],
    ['PUT', '/v1/admin/agents/agt_000000000000000000000000/config', { schemaVersion: 1 }],
    ['POST', '/v1/admin/agents/agt_000000000000000000000000/config/publish', undefined],
    ['GET', '/v1/admin/agents/agt_000000000000000000000000/config', undefined],
  ])('%s %s for an unknown id is 404 NOT_FOUND', async (method, path, body) => {
    const rowsBefore = await countRows('agents');
    const response = await admin(method, path, body);
    expect(response).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    expect(await countRows('agents')).toBe(rowsBefore);
  });

  it('matches ids exactly: a changed case or a prefix of a real id is unknown', async () => {
    const { agentId } = await createAgent();
    for (const variant of [agentId.toUpperCase(), agentId.slice(0, -1), `${agentId} `]) {
      const response = await admin('GET', `/v1/admin/agents/${encodeURIComponent(variant)}/config`);
      expect(response.status).toBe(404);
    }
  });

  it.each([
    ['an empty name', { name: '' }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name with a newline', { name: 'a\nb' }, 'name'],
    ['a 201-character name', { name: 'n'.repeat(201) }, 'name'],
    ['a missing name', {}, 'name'],
  ])('refuses a tenant with %s (400 naming %s), writing nothing', async (_name, body, path) => {
    const before = await countRows('tenants');
    const response = await admin('POST', '/v1/admin/tenants', body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('VALIDATION_FAILED');
    expect(response.body.errors.map((error: { path: string }) => error.path)).toContain(path);
    expect(await countRows('tenants')).toBe(before);
  });

  it.each([
    ['no permissions', { permissions: [] }],
    ['an unknown permission', { permissions: ['admin'] }],
    ['a repeated permission', { permissions: ['read', 'read'] }],
  ])('refuses a key with %s, issuing nothing', async (_name, body) => {
    const { agentId } = await createAgent();
    const before = await countRows('api_keys');
    const response = await admin('POST', `/v1/admin/agents/${agentId}/keys`, body);
    expect(response.status).toBe(400);
    expect(response.body.errors[0].path).toMatch(/^permissions/);
    expect(await countRows('api_keys')).toBe(before);
  });

  it('refuses malformed JSON (400 MALFORMED_JSON) and a non-JSON body (415)', async () => {
    const malformed = await service.fetch('/v1/admin/tenants', {
      method: 'POST',
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: '{"name":',
    });
    expect(malformed.status).toBe(400);
    expect((await readJson(malformed)).code).toBe('MALFORMED_JSON');

    const form = await service.fetch('/v1/admin/tenants', {
      method: 'POST',
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'Content-Type': 'text/plain' },
      body: 'name=Acme',
    });
    expect(form.status).toBe(415);
    expect((await readJson(form)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses an oversized body by Content-Length and when chunked, naming the limit', async () => {
    const before = await countRows('tenants');
    const padding = 'x'.repeat(300 * 1024);
    const declared = await rawRequest(`${service.url}/v1/admin/tenants`, {
      method: 'POST',
      headers: [
        ['Authorization', `Bearer ${TEST_ADMIN_TOKEN}`],
        ['Content-Type', 'application/json'],
      ],
      body: JSON.stringify({ name: 'Acme', padding }),
    });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body)).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      detail: expect.stringContaining('256 KiB'),
    });

    const chunked = await rawRequest(`${service.url}/v1/admin/tenants`, {
      method: 'POST',
      headers: [
        ['Authorization', `Bearer ${TEST_ADMIN_TOKEN}`],
        ['Content-Type', 'application/json'],
      ],
      chunks: ['{"name":"Acme","padding":"', ...Array.from({ length: 30 }, () => 'x'.repeat(16 * 1024)), '"}'],
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body).code).toBe('PAYLOAD_TOO_LARGE');
    expect(await countRows('tenants')).toBe(before);
  });

  it.each([
    ['no token', undefined],
    ['a wrong token', 'Bearer wrong-token-wrong-token'],
    ['the token with another scheme', `Basic ${TEST_ADMIN_TOKEN}`],
    ['an agent key', `Bearer mordn_${'A'.repeat(43)}`],
  ])('refuses %s (401 INVALID_ADMIN_TOKEN) and creates nothing', async (_name, authorization) => {
    const before = await countRows('tenants');
    const response = await service.fetch('/v1/admin/tenants', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(authorization ? { Authorization: authorization } : {}) },
      body: JSON.stringify({ name: 'Mallory' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect((await readJson(response)).code).toBe('INVALID_ADMIN_TOKEN');
    expect(await countRows('tenants')).toBe(before);
  });
});

describe('without MORDN_ADMIN_TOKEN', () => {
  it('has no admin routes at all', async () => {
    const bare = await startTestService({ environment: { MORDN_ADMIN_TOKEN: '' } });
    try {
      const response = await bare.fetch('/v1/admin/tenants', adminRequest('POST', { name: 'Acme' }));
      expect(response.status).toBe(404);
      expect((await readJson(response)).code).toBe('NOT_FOUND');
      const rows = await bare.database.db.selectFrom('tenants').selectAll().execute();
      expect(rows).toEqual([]);
    } finally {
      await bare.close();
    }
  });
});

describe('chunked JSON bodies', () => {
  it('accepts a chunked body under the limit', async () => {
    const response = await rawRequest(`${service.url}/v1/admin/tenants`, {
      method: 'POST',
      headers: [
        ['Authorization', `Bearer ${TEST_ADMIN_TOKEN}`],
        ['Content-Type', 'application/json'],
      ],
      chunks: ['{"na', 'me":"Chu', 'nked"}'],
    });
    expect(response.status).toBe(201);
    expect(JSON.parse(response.body).name).toBe('Chunked');
  });
});
