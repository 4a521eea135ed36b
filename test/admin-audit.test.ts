import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, readJson } from './support/json.js';
import { adminRequest, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';

const ACTOR = `admin:${createHash('sha256').update(TEST_ADMIN_TOKEN).digest('hex').slice(0, 12)}`;

interface Sent {
  status: number;
  body: Json;
  requestId: string;
}

/** An admin request with its own request id, so its audit row can be found by it. */
async function send(service: TestService, method: string, path: string, body?: unknown): Promise<Sent> {
  const requestId = `audit-${randomUUID()}`;
  const init = adminRequest(method, body);
  const response = await service.fetch(path, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), 'X-Request-Id': requestId },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, requestId };
}

/** Every audit row, newest first, read through the API page by page. */
async function readAudit(service: TestService, limit = 100): Promise<{ items: Json[]; text: string }> {
  const items: Json[] = [];
  let text = '';
  let cursor: string | null = null;
  do {
    const query: string = `?limit=${limit}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const response = await service.fetch(`/v1/admin/audit${query}`, adminRequest('GET'));
    expect(response.status).toBe(200);
    const pageText = await response.text();
    text += pageText;
    const page = JSON.parse(pageText);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { items, text };
}

async function auditRowCount(service: TestService): Promise<number> {
  const row = await service.database.db
    .selectFrom('admin_audit')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

describe('admin audit log', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service.close());

  it('records each admin write with actor, route pattern, target, request id and outcome, and no secret', async () => {
    const tenant = await send(service, 'POST', '/v1/admin/tenants', { name: 'Audited' });
    const tenantId = tenant.body.id;
    const agent = await send(service, 'POST', `/v1/admin/tenants/${tenantId}/agents`, { name: 'Bot' });
    const agentId = agent.body.id;
    const key = await send(service, 'POST', `/v1/admin/agents/${agentId}/keys`, { permissions: ['read', 'write'] });
    const draft = await send(service, 'PUT', `/v1/admin/agents/${agentId}/config`, { schemaVersion: 1 });
    const publish = await send(service, 'POST', `/v1/admin/agents/${agentId}/config/publish`);
    const renameTenant = await send(service, 'PATCH', `/v1/admin/tenants/${tenantId}`, { name: 'Renamed' });
    const renameAgent = await send(service, 'PATCH', `/v1/admin/agents/${agentId}`, { name: 'Renamed bot' });
    const revoke = await send(service, 'DELETE', `/v1/admin/keys/${key.body.id}`);
    const revokeAll = await send(service, 'POST', `/v1/admin/agents/${agentId}/users/u%3A1/artifacts/revoke-all`);
    const missing = await send(service, 'PATCH', '/v1/admin/tenants/ten_000000000000000000000000', { name: 'x' });
    const invalid = await send(service, 'PATCH', `/v1/admin/agents/${agentId}`, { name: '' });
    expect([tenant, agent, key].map((sent) => sent.status)).toEqual([201, 201, 201]);
    expect([draft, publish, renameTenant, renameAgent, revokeAll].map((sent) => sent.status)).toEqual([
      200, 200, 200, 200, 200,
    ]);
    expect([revoke.status, missing.status, invalid.status]).toEqual([204, 404, 400]);

    const { items, text } = await readAudit(service);
    const row = (sent: Sent) => {
      const found = items.filter((item) => item.requestId === sent.requestId);
      expect(found).toHaveLength(1);
      return found[0];
    };
    const expected: Array<[Sent, string, string, Record<string, string>]> = [
      [tenant, 'POST', '/v1/admin/tenants', {}],
      [agent, 'POST', '/v1/admin/tenants/:tenantId/agents', { tenantId }],
      [key, 'POST', '/v1/admin/agents/:agentId/keys', { agentId }],
      [draft, 'PUT', '/v1/admin/agents/:agentId/config', { agentId }],
      [publish, 'POST', '/v1/admin/agents/:agentId/config/publish', { agentId }],
      [renameTenant, 'PATCH', '/v1/admin/tenants/:tenantId', { tenantId }],
      [renameAgent, 'PATCH', '/v1/admin/agents/:agentId', { agentId }],
      [revoke, 'DELETE', '/v1/admin/keys/:keyId', { keyId: key.body.id }],
      [revokeAll, 'POST', '/v1/admin/agents/:agentId/users/:userId/artifacts/revoke-all', { agentId, userId: 'u:1' }],
      [missing, 'PATCH', '/v1/admin/tenants/:tenantId', { tenantId: 'ten_000000000000000000000000' }],
      [invalid, 'PATCH', '/v1/admin/agents/:agentId', { agentId }],
    ];
    for (const [sent, method, route, target] of expected) {
      expect(row(sent)).toEqual({
        id: expect.stringMatching(/^aud_[0-9a-f]{24}$/),
        at: expect.any(String),
        actor: ACTOR,
        method,
        route,
        target,
        requestId: sent.requestId,
        status: sent.status,
        outcome: sent.status < 400 ? 'ok' : 'failed',
      });
    }
    expect(row(missing)).toMatchObject({ status: 404, outcome: 'failed' });

    // Newest first: the rows come back in the reverse of the order the writes were made.
    const positions = expected.map(([sent]) => items.findIndex((item) => item.requestId === sent.requestId));
    expect(positions).toEqual([...positions].sort((a, b) => b - a));

    // No secret anywhere: neither the issued key nor the admin token, in the API or the table.
    const stored = JSON.stringify(await service.database.db.selectFrom('admin_audit').selectAll().execute());
    for (const secret of [key.body.key, TEST_ADMIN_TOKEN]) {
      expect(text).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
    expect(stored).not.toContain('Renamed bot');
  });

  it('records refused bodies and unmatched admin paths, but not reads or unauthenticated requests', async () => {
    const before = await auditRowCount(service);
    await send(service, 'GET', '/v1/admin/tenants');
    await send(service, 'GET', '/v1/admin/audit');
    const anonymous = await service.fetch('/v1/admin/tenants', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer wrong' },
      body: JSON.stringify({ name: 'Nope' }),
    });
    expect(anonymous.status).toBe(401);
    expect(await auditRowCount(service)).toBe(before);

    const malformedId = `audit-${randomUUID()}`;
    const malformed = await service.fetch('/v1/admin/tenants', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
        'Content-Type': 'application/json',
        'X-Request-Id': malformedId,
      },
      body: '{"name":',
    });
    expect(malformed.status).toBe(400);
    const unmatched = await send(service, 'POST', '/v1/admin/no-such-thing', {});
    expect(unmatched.status).toBe(404);
    expect(await auditRowCount(service)).toBe(before + 2);

    const { items } = await readAudit(service, 2);
    expect(items.find((item) => item.requestId === malformedId)).toMatchObject({
      route: '/v1/admin/tenants',
      status: 400,
      outcome: 'failed',
    });
    expect(items.find((item) => item.requestId === unmatched.requestId)).toMatchObject({
      method: 'POST',
      route: 'unmatched',
      target: {},
      status: 404,
      outcome: 'failed',
    });
  });

  it('covers routes registered after it: a refused DELETE of an unknown tenant is recorded', async () => {
    const deleted = await send(service, 'DELETE', '/v1/admin/tenants/ten_000000000000000000000000');
    expect(deleted.status).toBe(404);
    const { items } = await readAudit(service);
    expect(items.find((item) => item.requestId === deleted.requestId)).toMatchObject({
      method: 'DELETE',
      route: '/v1/admin/tenants/:tenantId',
      target: { tenantId: 'ten_000000000000000000000000' },
      status: 404,
      outcome: 'failed',
    });
  });

  it('pages newest first without repeats or gaps', async () => {
    for (let index = 0; index < 5; index += 1) await send(service, 'POST', '/v1/admin/tenants', { name: `T${index}` });
    const all = await readAudit(service, 100);
    const paged = await readAudit(service, 3);
    expect(paged.items.map((item) => item.id)).toEqual(all.items.map((item) => item.id));
    expect(new Set(paged.items.map((item) => item.id)).size).toBe(paged.items.length);
    expect(paged.items.length).toBe(await auditRowCount(service));
    const times = paged.items.map((item) => Date.parse(item.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('refuses a bad limit or cursor naming the field, and the wrong token', async () => {
    const limit = await send(service, 'GET', '/v1/admin/audit?limit=101');
    expect(limit).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    expect(limit.body.errors.map((error: { path: string }) => error.path)).toContain('limit');
    const cursor = await send(service, 'GET', '/v1/admin/audit?cursor=nonsense');
    expect(cursor).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    expect(cursor.body.errors.map((error: { path: string }) => error.path)).toContain('cursor');
    for (const headers of [{}, { Authorization: 'Bearer wrong' }] as Record<string, string>[]) {
      const response = await service.fetch('/v1/admin/audit', { headers });
      expect(response.status).toBe(401);
      expect((await readJson(response)).code).toBe('INVALID_ADMIN_TOKEN');
    }
  });
});

describe('admin audit log when its write fails', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service.close());

  it('answers the admin write as if nothing happened and logs the failure at error level', async () => {
    await sql`alter table admin_audit rename to admin_audit_away`.execute(service.database.db);
    try {
      const created = await send(service, 'POST', '/v1/admin/tenants', { name: 'Still created' });
      expect(created.status).toBe(201);
      const stored = await service.database.db
        .selectFrom('tenants')
        .select('name')
        .where('id', '=', created.body.id)
        .executeTakeFirst();
      expect(stored).toEqual({ name: 'Still created' });
      const lines = service.logs.map((line) => JSON.parse(line));
      const failure = lines.find((line) => line.msg === 'admin audit write failed');
      expect(failure).toMatchObject({
        level: 50,
        requestId: created.requestId,
        route: '/v1/admin/tenants',
        status: 201,
      });
      expect(JSON.stringify(failure)).not.toContain(TEST_ADMIN_TOKEN);
    } finally {
      await sql`alter table admin_audit_away rename to admin_audit`.execute(service.database.db);
    }
    const after = await send(service, 'POST', '/v1/admin/tenants', { name: 'Recorded again' });
    expect(after.status).toBe(201);
    const { items } = await readAudit(service);
    expect(items.map((item) => item.requestId)).toContain(after.requestId);
  });
});
