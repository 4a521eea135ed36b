import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { adminRequest, agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { storeArtifact } from './support/stored-artifact.js';
import { PNG_1X1, upload } from './support/upload.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const UNKNOWN_TENANT = 'ten_000000000000000000000000';
const UNKNOWN_AGENT = 'agt_000000000000000000000000';

async function admin(service: TestService, method: string, path: string, body?: unknown) {
  const response = await service.fetch(path, adminRequest(method, body));
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json, text };
}

/** Follows `nextCursor` from the first page to the last, returning every page. */
async function walk(service: TestService, path: string, limit: number): Promise<Json[]> {
  const pages: Json[] = [];
  let cursor: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const query: string = `${separator}limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const page = await admin(service, 'GET', `${path}${query}`);
    expect(page.status).toBe(200);
    expect(page.body.items.length).toBeLessThanOrEqual(limit);
    pages.push(page.body);
    cursor = page.body.nextCursor;
    expect(pages.length).toBeLessThan(100);
  } while (cursor !== null);
  return pages;
}

const ids = (pages: Json[]) => pages.flatMap((page) => page.items.map((item: Json) => item.id as string));

/** The order every listing promises: created first, then id. */
function expectCreationOrder(items: Json[]): void {
  const keys = items.map((item) => [Date.parse(item.createdAt), item.id as string] as const);
  const sorted = [...keys].sort(([at1, id1], [at2, id2]) => at1 - at2 || (id1 < id2 ? -1 : id1 > id2 ? 1 : 0));
  expect(keys).toEqual(sorted);
}

describe('admin lists, reads and renames', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service.close());

  async function newTenant(name = 'Acme') {
    return (await admin(service, 'POST', '/v1/admin/tenants', { name })).body.id as string;
  }

  async function newAgent(tenantId: string, name = 'Bot') {
    return (await admin(service, 'POST', `/v1/admin/tenants/${tenantId}/agents`, { name })).body.id as string;
  }

  it.each([
    ['GET', '/v1/admin/tenants', undefined],
    ['GET', `/v1/admin/tenants/${UNKNOWN_TENANT}`, undefined],
    ['PATCH', `/v1/admin/tenants/${UNKNOWN_TENANT}`, { name: 'x' }],
    ['GET', `/v1/admin/tenants/${UNKNOWN_TENANT}/agents`, undefined],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}`, undefined],
    ['PATCH', `/v1/admin/agents/${UNKNOWN_AGENT}`, { name: 'x' }],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}/keys`, undefined],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}/workspaces`, undefined],
  ])('%s %s: 401 without the admin token and with a wrong one', async (method, path, body) => {
    const tenantsBefore = await service.database.db.selectFrom('tenants').selectAll().execute();
    for (const authorization of [undefined, 'Bearer not-the-admin-token', `Bearer ${TEST_ADMIN_TOKEN}x`]) {
      const response = await service.fetch(path, {
        method,
        headers: {
          ...(authorization ? { Authorization: authorization } : {}),
          ...(body ? { 'Content-Type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      expect(response.status).toBe(401);
      expect((await readJson(response)).code).toBe('INVALID_ADMIN_TOKEN');
    }
    expect(await service.database.db.selectFrom('tenants').selectAll().execute()).toEqual(tenantsBefore);
  });

  it('lists every tenant once, oldest first, across pages, with later tenants on the last page', async () => {
    const created = [];
    for (let index = 0; index < 7; index += 1) created.push(await newTenant(`Tenant ${index}`));
    const pages = await walk(service, '/v1/admin/tenants', 3);
    const listed = ids(pages);
    const all = await service.database.db.selectFrom('tenants').select('id').execute();
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.sort()).toEqual(all.map((row) => row.id).sort());
    const items = pages.flatMap((page) => page.items);
    expectCreationOrder(items);
    // Ours were created one after the other, so they appear in that order, at the end.
    expect(items.slice(-7).map((item: Json) => item.id)).toEqual(created);
    expect(items.at(-1)).toEqual({ id: created[6], name: 'Tenant 6', createdAt: expect.any(String) });
    expect(pages.at(-1).nextCursor).toBeNull();
    expect(pages.slice(0, -1).every((page) => typeof page.nextCursor === 'string')).toBe(true);

    // Walking again gives the same order, and a new tenant joins at the very end.
    const later = await newTenant('Later');
    const again = ids(await walk(service, '/v1/admin/tenants', 3));
    expect(again).toEqual([...ids(pages), later]);
  });

  it("lists one tenant's agents only, across pages", async () => {
    const tenantId = await newTenant();
    const other = await newTenant('Other');
    await newAgent(other, 'Not listed');
    const created = [];
    for (let index = 0; index < 5; index += 1) created.push(await newAgent(tenantId, `Agent ${index}`));
    const pages = await walk(service, `/v1/admin/tenants/${tenantId}/agents`, 2);
    expect(pages.map((page) => page.items.length)).toEqual([2, 2, 1]);
    expect(ids(pages)).toEqual(created);
    expect(pages[0].items[0]).toEqual({ id: created[0], tenantId, name: 'Agent 0', createdAt: expect.any(String) });
    expectCreationOrder(pages.flatMap((page) => page.items));
    const empty = await admin(service, 'GET', `/v1/admin/tenants/${await newTenant('Empty')}/agents`);
    expect(empty).toMatchObject({ status: 200, body: { items: [], nextCursor: null } });
  });

  it('answers a full last page with no further cursor', async () => {
    const tenantId = await newTenant();
    for (let index = 0; index < 4; index += 1) await newAgent(tenantId);
    const pages = await walk(service, `/v1/admin/tenants/${tenantId}/agents`, 2);
    expect(pages.map((page) => page.items.length)).toEqual([2, 2]);
    const all = await admin(service, 'GET', `/v1/admin/tenants/${tenantId}/agents?limit=4`);
    expect(all.body.nextCursor).toBeNull();
    expect(all.body.items).toHaveLength(4);
  });

  it('reads and renames a tenant and an agent; the new names show in get and list', async () => {
    const tenantId = await newTenant('Before');
    const agentId = await newAgent(tenantId, 'Old bot');
    const tenant = await admin(service, 'GET', `/v1/admin/tenants/${tenantId}`);
    expect(tenant).toMatchObject({ status: 200, body: { id: tenantId, name: 'Before' } });
    expect(new Date(tenant.body.createdAt).toISOString()).toBe(tenant.body.createdAt);

    const renamed = await admin(service, 'PATCH', `/v1/admin/tenants/${tenantId}`, { name: '  After  ' });
    expect(renamed).toMatchObject({
      status: 200,
      body: { id: tenantId, name: 'After', createdAt: tenant.body.createdAt },
    });
    expect((await admin(service, 'GET', `/v1/admin/tenants/${tenantId}`)).body.name).toBe('After');
    const listed = (await walk(service, '/v1/admin/tenants', 100)).flatMap((page) => page.items);
    expect(listed.find((item: Json) => item.id === tenantId)?.name).toBe('After');

    expect((await admin(service, 'GET', `/v1/admin/agents/${agentId}`)).body).toEqual({
      id: agentId,
      tenantId,
      name: 'Old bot',
      createdAt: expect.any(String),
    });
    const agent = await admin(service, 'PATCH', `/v1/admin/agents/${agentId}`, { name: 'New bot' });
    expect(agent).toMatchObject({ status: 200, body: { id: agentId, tenantId, name: 'New bot' } });
    expect((await admin(service, 'GET', `/v1/admin/agents/${agentId}`)).body.name).toBe('New bot');
    expect((await admin(service, 'GET', `/v1/admin/tenants/${tenantId}/agents`)).body.items[0].name).toBe('New bot');
  });

  it.each([
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
    ['a name with a newline', { name: 'a\nb' }],
    ['a 201-character name', { name: 'n'.repeat(201) }],
    ['a missing name', {}],
    ['a number', { name: 7 }],
  ])('refuses a rename to %s (400 naming name), changing nothing', async (_case, body) => {
    const tenantId = await newTenant('Kept');
    const agentId = await newAgent(tenantId, 'Kept bot');
    for (const path of [`/v1/admin/tenants/${tenantId}`, `/v1/admin/agents/${agentId}`]) {
      const response = await admin(service, 'PATCH', path, body);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('VALIDATION_FAILED');
      expect(response.body.errors.map((error: { path: string }) => error.path)).toContain('name');
    }
    expect((await admin(service, 'GET', `/v1/admin/tenants/${tenantId}`)).body.name).toBe('Kept');
    expect((await admin(service, 'GET', `/v1/admin/agents/${agentId}`)).body.name).toBe('Kept bot');
  });

  it.each([
    ['GET', `/v1/admin/tenants/${UNKNOWN_TENANT}`, undefined],
    ['PATCH', `/v1/admin/tenants/${UNKNOWN_TENANT}`, { name: 'x' }],
    ['GET', `/v1/admin/tenants/${UNKNOWN_TENANT}/agents`, undefined],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}`, undefined],
    ['PATCH', `/v1/admin/agents/${UNKNOWN_AGENT}`, { name: 'x' }],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}/keys`, undefined],
    ['GET', `/v1/admin/agents/${UNKNOWN_AGENT}/workspaces`, undefined],
  ])('%s %s for an unknown id is 404 NOT_FOUND, creating nothing', async (method, path, body) => {
    const before = await service.database.db.selectFrom('tenants').select('id').execute();
    const response = await admin(service, method, path, body);
    expect(response).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    expect(await service.database.db.selectFrom('tenants').select('id').execute()).toEqual(before);
  });

  it('matches ids exactly: an agent id is not a tenant id, and case or a prefix does not match', async () => {
    const tenantId = await newTenant();
    const agentId = await newAgent(tenantId);
    expect((await admin(service, 'GET', `/v1/admin/tenants/${agentId}`)).status).toBe(404);
    expect((await admin(service, 'GET', `/v1/admin/agents/${tenantId}`)).status).toBe(404);
    for (const variant of [tenantId.toUpperCase(), tenantId.slice(0, -1)]) {
      expect((await admin(service, 'GET', `/v1/admin/tenants/${variant}`)).status).toBe(404);
    }
  });

  describe('validation of ?limit and ?cursor', () => {
    const lists = [
      '/v1/admin/tenants',
      `/v1/admin/tenants/{tenant}/agents`,
      `/v1/admin/agents/{agent}/keys`,
      `/v1/admin/agents/{agent}/workspaces`,
    ];
    let fixture: AgentFixture;
    beforeAll(async () => {
      fixture = await createAgentFixture(service.database.db);
    });
    const pathOf = (list: string) => list.replace('{tenant}', fixture.tenantId).replace('{agent}', fixture.agentId);

    it.each(lists)('%s refuses a bad limit, naming limit', async (list) => {
      for (const limit of ['0', '101', '-1', '2.5', 'ten', '']) {
        const response = await admin(service, 'GET', `${pathOf(list)}?limit=${limit}`);
        expect(response.status, `limit=${limit}`).toBe(400);
        expect(response.body.code).toBe('VALIDATION_FAILED');
        expect(response.body.errors.map((error: { path: string }) => error.path)).toContain('limit');
      }
      expect((await admin(service, 'GET', `${pathOf(list)}?limit=100`)).status).toBe(200);
      expect((await admin(service, 'GET', `${pathOf(list)}?limit=1`)).status).toBe(200);
    });

    it.each(lists)('%s refuses a cursor it did not mint, and unknown parameters', async (list) => {
      const forged = [
        'not-a-cursor',
        Buffer.from('[1,2,3]').toString('base64url'),
        Buffer.from('{"at":1}').toString('base64url'),
        Buffer.from('["1","x"]').toString('base64url'),
        'x'.repeat(401),
      ];
      for (const cursor of forged) {
        const response = await admin(service, 'GET', `${pathOf(list)}?cursor=${encodeURIComponent(cursor)}`);
        expect(response.status, cursor).toBe(400);
        expect(response.body.code).toBe('VALIDATION_FAILED');
        expect(response.body.errors.map((error: { path: string }) => error.path)).toContain('cursor');
      }
      const unknown = await admin(service, 'GET', `${pathOf(list)}?offset=3`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.code).toBe('VALIDATION_FAILED');
    });
  });

  describe('keys of an agent', () => {
    it('pages key metadata with last use, never the key or its hash', async () => {
      const tenantId = await newTenant();
      const agentId = await newAgent(tenantId);
      const issued = [];
      for (const permissions of [['read'], ['read', 'write'], ['write'], ['read']]) {
        issued.push((await admin(service, 'POST', `/v1/admin/agents/${agentId}/keys`, { permissions })).body);
      }
      await admin(service, 'DELETE', `/v1/admin/keys/${issued[2].id}`);
      const pages = await walk(service, `/v1/admin/agents/${agentId}/keys`, 3);
      expect(pages.map((page) => page.items.length)).toEqual([3, 1]);
      expect(ids(pages)).toEqual(issued.map((key) => key.id));
      const items = pages.flatMap((page) => page.items);
      expect(items[1]).toEqual({
        id: issued[1].id,
        permissions: ['read', 'write'],
        createdAt: expect.any(String),
        lastUsedAt: null,
        revokedAt: null,
      });
      expect(items[2].revokedAt).toEqual(expect.any(String));
      // The deprecated alias carries the same page in the earlier shape.
      expect(pages[1].keys).toEqual([
        {
          id: issued[3].id,
          prefix: issued[3].key.slice(0, 12),
          permissions: ['read'],
          createdAt: items[3].createdAt,
          revokedAt: null,
        },
      ]);
      const rows = await service.database.db.selectFrom('api_keys').select('key_hash').execute();
      const text = JSON.stringify(pages);
      for (const key of issued) expect(text).not.toContain(key.key);
      for (const row of rows) expect(text).not.toContain(row.key_hash);
    });

    it('records last use at most once a minute, and only for a valid request', async () => {
      const fixture = await createAgentFixture(service.database.db);
      const lastUsed = async () =>
        (
          await service.database.db
            .selectFrom('api_keys')
            .select('last_used_at')
            .where('id', '=', fixture.keyId)
            .executeTakeFirstOrThrow()
        ).last_used_at;
      expect(await lastUsed()).toBeNull();

      // A refused request (bad user header) is not a use.
      const refused = await service.fetch('/v1/me', { headers: { Authorization: `Bearer ${fixture.key}` } });
      expect(refused.status).toBe(400);
      expect(await lastUsed()).toBeNull();

      const before = Date.now();
      expect((await service.fetch('/v1/me', { headers: agentHeaders(fixture.key) })).status).toBe(200);
      const first = await lastUsed();
      expect(first).toBeGreaterThanOrEqual(before);
      for (let index = 0; index < 3; index += 1) {
        expect((await service.fetch('/v1/me', { headers: agentHeaders(fixture.key) })).status).toBe(200);
      }
      expect(await lastUsed()).toBe(first);

      const listed = await admin(service, 'GET', `/v1/admin/agents/${fixture.agentId}/keys`);
      const item = listed.body.items.find((key: Json) => key.id === fixture.keyId);
      expect(item.lastUsedAt).toBe(new Date(Number(first)).toISOString());

      // Once the recorded use is a minute old, the next request records a new one.
      await service.database.db
        .updateTable('api_keys')
        .set({ last_used_at: Number(first) - 61_000 })
        .where('id', '=', fixture.keyId)
        .execute();
      expect((await service.fetch('/v1/me', { headers: agentHeaders(fixture.key) })).status).toBe(200);
      expect(await lastUsed()).toBeGreaterThanOrEqual(before);
    });
  });
});

describe('workspaces of an agent', () => {
  const RETENTION_DAYS = 5;
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    service = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
        MORDN_SANDBOX_RETENTION_DAYS: String(RETENTION_DAYS),
      },
    });
    fixture = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
    });
  });
  afterAll(() => service.close());

  it('lists the workspace a real tool call made, with its recorded use and retention date', async () => {
    const empty = await admin(service, 'GET', `/v1/admin/agents/${fixture.agentId}/workspaces`);
    expect(empty).toMatchObject({ status: 200, body: { items: [], nextCursor: null } });

    for (const userId of ['alice', 'bob']) {
      const client = await connectSdkClient(service, fixture.key, userId);
      try {
        const written = await callTool(client, 'sandbox_write_file', { path: 'notes.txt', content: 'x'.repeat(3000) });
        expect(written.isError, JSON.stringify(written.value)).toBe(false);
        const listed = await callTool(client, 'sandbox_list_files', {});
        expect(listed.isError).toBe(false);
      } finally {
        await client.close();
      }
    }
    const other = await createAgentFixture(service.database.db, { tenantId: fixture.tenantId });
    expect((await admin(service, 'GET', `/v1/admin/agents/${other.agentId}/workspaces`)).body.items).toEqual([]);

    const pages = await walk(service, `/v1/admin/agents/${fixture.agentId}/workspaces`, 1);
    expect(pages).toHaveLength(2);
    const items = pages.flatMap((page) => page.items);
    const rows = await service.database.db
      .selectFrom('workspaces')
      .selectAll()
      .where('agent_id', '=', fixture.agentId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    expect(items.map((item: Json) => item.userId)).toEqual(rows.map((row) => row.user_id));
    expect(items.map((item: Json) => item.userId).sort()).toEqual(['alice', 'bob']);
    for (const [index, item] of items.entries()) {
      const row = rows[index];
      expect(item).toEqual({
        id: row?.id,
        userId: row?.user_id,
        backend: row?.backend,
        bytesUsed: Number(row?.bytes),
        fileCount: null,
        lastUsedAt: new Date(Number(row?.last_used_at)).toISOString(),
        deleteAfter: new Date(Number(row?.last_used_at) + RETENTION_DAYS * DAY_MS).toISOString(),
      });
      expect(item.backend).toBe(service.config.sandbox.backend);
      // The tool calls measured the workspace holding the 3000-byte file.
      expect(item.bytesUsed).toBeGreaterThanOrEqual(3000);
    }
    // The list was answered from the records: listing changed no workspace.
    const after = await service.database.db
      .selectFrom('workspaces')
      .selectAll()
      .where('agent_id', '=', fixture.agentId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    expect(after).toEqual(rows);
  });
});

describe('usage of a tenant', () => {
  let service: TestService;
  let fixture: AgentFixture;
  let other: AgentFixture;

  beforeAll(async () => {
    service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
    });
    const published = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
    fixture = await createAgentFixture(service.database.db, { published });
    other = await createAgentFixture(service.database.db, { published });
  });
  afterAll(() => service.close());

  const usagePath = (tenantId: string, from: number, to: number) =>
    `/v1/admin/tenants/${tenantId}/usage?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;

  it('counts tool calls, exec seconds, bytes stored, chats and downloads in the range only', async () => {
    const from = Date.now() - 1;
    const client = await connectSdkClient(service, fixture.key, 'alice');
    try {
      const slept = await callTool(client, 'sandbox_exec', { command: 'sleep 0.3' });
      expect(slept.isError, JSON.stringify(slept.value)).toBe(false);
      expect((await callTool(client, 'sandbox_write_file', { path: 'a.txt', content: 'a' })).isError).toBe(false);
      // Refused before it ran: not a call that used the sandbox.
      expect((await callTool(client, 'sandbox_write_file', { path: 'a.txt' })).isError).toBe(true);
    } finally {
      await client.close();
    }
    const otherClient = await connectSdkClient(service, other.key, 'bob');
    try {
      expect((await callTool(otherClient, 'sandbox_exec', { command: 'true' })).isError).toBe(false);
    } finally {
      await otherClient.close();
    }
    const uploaded = await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'dot.png', type: 'image/png' });
    expect(uploaded.status).toBe(201);
    const owner = { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: 'alice' };
    const old = from - 10 * DAY_MS;
    await storeArtifact(service, owner, Buffer.from('old artifact'), {
      filename: 'old.txt',
      mediaType: 'text/plain',
      createdAt: old,
    });
    const chat = (chatId: string, at: number) => ({
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: 'alice',
      chat_id: chatId,
      messages: '[]',
      created_at: at,
      updated_at: at,
    });
    await service.database.db
      .insertInto('chats')
      .values([chat('recent', Date.now()), chat('old', old)])
      .execute();
    const download = (id: string, status: number, at: number) => ({
      id,
      storage_path: 'artifacts/0123456789abcdef0123456789abcdef',
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: 'alice',
      downloaded_at: at,
      client_ip: null,
      user_agent: null,
      status,
      bytes: null,
    });
    await service.database.db
      .insertInto('artifact_downloads')
      .values([
        download('dl_1', 200, Date.now()),
        download('dl_2', 302, Date.now()),
        download('dl_3', 404, Date.now()),
        download('dl_4', 200, old),
      ])
      .execute();
    const to = Date.now() + 1;

    const usage = await admin(service, 'GET', usagePath(fixture.tenantId, from, to));
    expect(usage.status).toBe(200);
    expect(usage.body).toEqual({
      tenantId: fixture.tenantId,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      toolCalls: 2,
      execSeconds: expect.any(Number),
      bytesStored: PNG_1X1.length,
      chats: 1,
      downloads: 2,
    });
    expect(usage.body.execSeconds).toBeGreaterThanOrEqual(0.3);
    expect(usage.body.execSeconds).toBeLessThan(30);

    // The other tenant's call is its own; a range before everything is empty.
    expect((await admin(service, 'GET', usagePath(other.tenantId, from, to))).body.toolCalls).toBe(1);
    expect((await admin(service, 'GET', usagePath(fixture.tenantId, old - DAY_MS, old))).body).toMatchObject({
      toolCalls: 0,
      execSeconds: 0,
      bytesStored: 0,
      chats: 0,
      downloads: 0,
    });
    // Without a range: the last 30 days up to now, which holds the old rows as well.
    const recent = await admin(service, 'GET', `/v1/admin/tenants/${fixture.tenantId}/usage`);
    expect(recent.body).toMatchObject({ toolCalls: 2, chats: 2, downloads: 3, bytesStored: PNG_1X1.length + 12 });
    expect(Date.parse(recent.body.to) - Date.parse(recent.body.from)).toBe(30 * DAY_MS);
  });

  it('refuses a bad range naming the field, and answers 404 for an unknown tenant', async () => {
    const base = `/v1/admin/tenants/${fixture.tenantId}/usage`;
    for (const [query, field] of [
      ['?from=yesterday', 'from'],
      ['?to=2026-13-01T00:00:00Z', 'to'],
      ['?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
      ['?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
      ['?since=2026-01-01T00:00:00Z', ''],
    ] as const) {
      const response = await admin(service, 'GET', `${base}${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.code).toBe('VALIDATION_FAILED');
      if (field) expect(response.body.errors.map((error: { path: string }) => error.path)).toContain(field);
    }
    const unknown = await admin(service, 'GET', `/v1/admin/tenants/${UNKNOWN_TENANT}/usage`);
    expect(unknown).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    const anonymous = await service.fetch(base);
    expect(anonymous.status).toBe(401);
  });
});
