import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepDownloadAudit } from '../src/artifacts/download-audit.js';
import { createStoragePath } from '../src/storage/storage-path.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { adminRequest, agentHeaders, startTestService, type TestService } from './support/service.js';
import { storeArtifact } from './support/stored-artifact.js';
import { upload } from './support/upload.js';

let service: TestService;
let fixture: AgentFixture;
let other: AgentFixture;

beforeAll(async () => {
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
  other = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

interface Published {
  storagePath: string;
  bytes: Buffer;
}

/** An artifact of `userId` (of the owner's agent), of `size` printable bytes. */
function publish(
  owner: AgentFixture,
  userId: string,
  options: { size?: number; filename?: string; createdAt?: number } = {},
): Promise<Published> {
  const size = options.size ?? 64;
  const bytes = Buffer.from(randomBytes(Math.ceil(size / 2)).toString('hex')).subarray(0, size);
  return storeArtifact(service, { tenantId: owner.tenantId, agentId: owner.agentId, userId }, bytes, {
    filename: options.filename ?? 'report.txt',
    mediaType: 'text/plain',
    ...(options.createdAt === undefined ? {} : { createdAt: options.createdAt }),
  });
}

const jsonHeaders = (key: string, userId: string) => ({
  ...agentHeaders(key, userId),
  'Content-Type': 'application/json',
});

function post(path: string, key: string, userId: string, body: unknown): Promise<Response> {
  return service.fetch(path, { method: 'POST', headers: jsonHeaders(key, userId), body: JSON.stringify(body) });
}

async function resign(storagePath: string, userId: string, key = fixture.key): Promise<Response> {
  return post('/v1/uploads/resign', key, userId, { storagePath });
}

async function signedUrl(storagePath: string, userId: string): Promise<string> {
  const response = await resign(storagePath, userId);
  expect(response.status).toBe(200);
  return (await readJson(response)).url;
}

async function downloads(storagePath: string, userId: string): Promise<Json[]> {
  const response = await service.fetch(`/v1/artifacts/downloads?storagePath=${encodeURIComponent(storagePath)}`, {
    headers: agentHeaders(fixture.key, userId),
  });
  expect(response.status).toBe(200);
  return (await readJson(response)).items;
}

/** Waits for `count` audit rows of `storagePath` (they are written once each download settles). */
function downloadsSettled(storagePath: string, userId: string, count: number): Promise<Json[]> {
  return pollUntil(
    () => downloads(storagePath, userId),
    (items) => items.length >= count,
    { timeoutMs: 10_000 },
  );
}

async function storeChat(userId: string, chatId: string, storagePaths: string[]): Promise<void> {
  const parts = storagePaths.map((storagePath) => ({
    type: 'file',
    url: 'https://stale.example/old',
    mediaType: 'text/plain',
    filename: 'report.txt',
    size: 64,
    storagePath,
  }));
  const now = Date.now();
  await service.database.db
    .insertInto('chats')
    .values({
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: userId,
      chat_id: chatId,
      messages: JSON.stringify([
        { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'make me a report' }] },
        { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'Here it is.' }, ...parts] },
      ]),
      created_at: now,
      updated_at: now,
    })
    .execute();
}

async function historyFilePart(userId: string, chatId: string): Promise<Json> {
  const response = await service.fetch(`/v1/chats/${chatId}`, { headers: agentHeaders(fixture.key, userId) });
  expect(response.status).toBe(200);
  const history = await readJson(response);
  return history.messages[1].parts.find((part: Json) => part.type === 'file');
}

describe('artifact URLs and revocation (fs storage)', () => {
  it("hands out the service's own artifact URL; revoked answers like deleted, resign like missing, restore brings it back", async () => {
    const artifact = await publish(fixture, 'rev-user');
    const url = await signedUrl(artifact.storagePath, 'rev-user');
    expect(url.startsWith(`${service.url}/v1/files/artifacts/`)).toBe(true);
    const before = await fetch(url);
    expect(before.status).toBe(200);
    expect(Buffer.from(await before.arrayBuffer())).toEqual(artifact.bytes);

    const revoked = await post('/v1/artifacts/revoke', fixture.key, 'rev-user', { storagePath: artifact.storagePath });
    expect(revoked.status).toBe(200);
    expect(await readJson(revoked)).toMatchObject({ storagePath: artifact.storagePath, state: 'revoked' });

    // The same, already handed-out URL now fails exactly like the URL of a deleted file.
    const deleted = await publish(fixture, 'rev-user');
    const deletedUrl = await signedUrl(deleted.storagePath, 'rev-user');
    const purge = await service.fetch('/v1/uploads', {
      method: 'DELETE',
      headers: jsonHeaders(fixture.key, 'rev-user'),
      body: JSON.stringify({ storagePaths: [deleted.storagePath] }),
    });
    expect(purge.status).toBe(204);
    const afterRevoke = await fetch(url);
    const afterDelete = await fetch(deletedUrl);
    expect(afterRevoke.status).toBe(404);
    expect(afterDelete.status).toBe(404);
    const [revokedProblem, deletedProblem] = [await readJson(afterRevoke), await readJson(afterDelete)];
    expect({ ...revokedProblem, requestId: undefined }).toEqual({ ...deletedProblem, requestId: undefined });
    expect(revokedProblem.code).toBe('NOT_FOUND');

    // Re-signing answers the very 404 of a path that never existed.
    const resignRevoked = await resign(artifact.storagePath, 'rev-user');
    const resignMissing = await resign(createStoragePath('artifact'), 'rev-user');
    expect(resignRevoked.status).toBe(404);
    expect({ ...(await readJson(resignRevoked)), requestId: undefined }).toEqual({
      ...(await readJson(resignMissing)),
      requestId: undefined,
    });

    const restored = await post('/v1/artifacts/restore', fixture.key, 'rev-user', {
      storagePath: artifact.storagePath,
    });
    expect(await readJson(restored)).toMatchObject({ state: 'active', revokedAt: null });
    const again = await fetch(url);
    expect(again.status).toBe(200);
    expect(Buffer.from(await again.arrayBuffer())).toEqual(artifact.bytes);
    expect((await resign(artifact.storagePath, 'rev-user')).status).toBe(200);
  });

  it('shows a revoked artifact as unavailable in every chat that references it, and re-signs it after restore', async () => {
    const artifact = await publish(fixture, 'hist-user');
    await storeChat('hist-user', 'chat-one', [artifact.storagePath]);
    await storeChat('hist-user', 'chat-two', [artifact.storagePath]);

    const listed = await readJson(
      await service.fetch('/v1/artifacts', { headers: agentHeaders(fixture.key, 'hist-user') }),
    );
    expect(listed.items).toEqual([
      expect.objectContaining({
        storagePath: artifact.storagePath,
        chatIds: ['chat-one', 'chat-two'],
        state: 'active',
      }),
    ]);

    const fresh = await historyFilePart('hist-user', 'chat-one');
    expect(fresh.url.startsWith(`${service.url}/v1/files/artifacts/`)).toBe(true);

    await post('/v1/artifacts/revoke', fixture.key, 'hist-user', { storagePath: artifact.storagePath });
    for (const chatId of ['chat-one', 'chat-two']) {
      expect(await historyFilePart('hist-user', chatId)).toMatchObject({
        unavailable: true,
        url: '',
        storagePath: artifact.storagePath,
      });
    }
    expect((await fetch(fresh.url)).status).toBe(404);

    await post('/v1/artifacts/restore', fixture.key, 'hist-user', { storagePath: artifact.storagePath });
    const resigned = await historyFilePart('hist-user', 'chat-two');
    expect(resigned.unavailable).toBeUndefined();
    const download = await fetch(resigned.url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(artifact.bytes);
  });

  it('lets a download already streaming finish and records it; the next request is refused and recorded', async () => {
    const size = 48 * 1024 * 1024;
    const artifact = await publish(fixture, 'stream-user', { size });
    const url = await signedUrl(artifact.storagePath, 'stream-user');
    const response = await fetch(url, { headers: { 'User-Agent': 'stream-test/1.0' } });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    let received = first.value?.length ?? 0;
    expect(received).toBeLessThan(size);

    const revoked = await post('/v1/artifacts/revoke', fixture.key, 'stream-user', {
      storagePath: artifact.storagePath,
    });
    expect(revoked.status).toBe(200);
    const hash = createHash('sha256').update(first.value ?? new Uint8Array());
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      received += next.value.length;
      hash.update(next.value);
    }
    expect(received).toBe(size);
    expect(hash.digest('hex')).toBe(createHash('sha256').update(artifact.bytes).digest('hex'));

    const refused = await fetch(url, { headers: { 'User-Agent': 'stream-test/1.0' } });
    expect(refused.status).toBe(404);

    const records = await downloadsSettled(artifact.storagePath, 'stream-user', 2);
    expect(records.map((record: Json) => [record.status, record.bytes])).toEqual([
      [404, null],
      [200, size],
    ]);
    for (const record of records) {
      expect(record).toMatchObject({
        storagePath: artifact.storagePath,
        tenantId: fixture.tenantId,
        agentId: fixture.agentId,
        userId: 'stream-user',
        clientIp: '127.0.0.1',
        userAgent: 'stream-test/1.0',
      });
    }
  });

  it('records a client that leaves mid-stream as 499 with the bytes sent until then', async () => {
    const size = 32 * 1024 * 1024;
    const artifact = await publish(fixture, 'abort-user', { size });
    const url = await signedUrl(artifact.storagePath, 'abort-user');
    const abort = new AbortController();
    const response = await fetch(url, { signal: abort.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    abort.abort();
    await reader.read().catch(() => undefined);
    const [record] = await downloadsSettled(artifact.storagePath, 'abort-user', 1);
    expect(record.status).toBe(499);
    expect(record.bytes).toBeGreaterThan(0);
    expect(record.bytes).toBeLessThan(size);
  });

  it('counts downloads by status in /metrics, without tenant or user ids, and records the socket peer', async () => {
    const artifact = await publish(fixture, 'metric-user-secret-id');
    const url = await signedUrl(artifact.storagePath, 'metric-user-secret-id');
    // A HEAD is checked (200 here) but is no download: it is not recorded.
    const head = await fetch(url, { method: 'HEAD', headers: { 'User-Agent': 'head-probe' } });
    expect(head.status).toBe(200);
    // Without trusted proxies the header is a client's claim: never recorded.
    await (await fetch(url, { headers: { 'X-Forwarded-For': '198.51.100.7' } })).arrayBuffer();
    const records = await downloadsSettled(artifact.storagePath, 'metric-user-secret-id', 1);
    expect(records).toHaveLength(1);
    expect(records[0].clientIp).toBe('127.0.0.1');
    expect(records[0].userAgent).not.toBe('head-probe');
    const metrics = await (await service.fetch('/metrics')).text();
    expect(Number(/^mordn_artifact_downloads_total\{status="200"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );
    expect(metrics).not.toContain('metric-user-secret-id');
    expect(metrics).not.toContain(fixture.tenantId);
    expect(metrics).not.toMatch(/tenant=|user=|ten_|agt_/);
  });

  it('keeps the owners apart: unowned and missing look the same for every route', async () => {
    const artifact = await publish(fixture, 'owner-a');
    const missing = createStoragePath('artifact');
    for (const action of ['revoke', 'restore']) {
      for (const [key, userId] of [
        [fixture.key, 'owner-b'],
        [other.key, 'owner-a'],
      ] as const) {
        const unowned = await post(`/v1/artifacts/${action}`, key, userId, { storagePath: artifact.storagePath });
        const absent = await post(`/v1/artifacts/${action}`, key, userId, { storagePath: missing });
        expect(unowned.status).toBe(404);
        expect({ ...(await readJson(unowned)), requestId: undefined }).toEqual({
          ...(await readJson(absent)),
          requestId: undefined,
        });
      }
    }
    const foreignDownloads = await service.fetch(
      `/v1/artifacts/downloads?storagePath=${encodeURIComponent(artifact.storagePath)}`,
      { headers: agentHeaders(fixture.key, 'owner-b') },
    );
    expect(foreignDownloads.status).toBe(404);
    expect((await readJson(foreignDownloads)).code).toBe('NOT_FOUND');
    const foreignList = await readJson(
      await service.fetch('/v1/artifacts', { headers: agentHeaders(other.key, 'owner-a') }),
    );
    expect(foreignList).toEqual({ items: [], nextCursor: null });
    // Still active for its owner: nothing above changed it.
    expect((await resign(artifact.storagePath, 'owner-a')).status).toBe(200);
  });

  it('pages in a stable order (newest first, storage path breaking ties) with an opaque cursor', async () => {
    const base = Date.now() - 60_000;
    const created = [
      await publish(fixture, 'page-user', { createdAt: base }),
      await publish(fixture, 'page-user', { createdAt: base + 1 }),
      await publish(fixture, 'page-user', { createdAt: base + 1 }),
      await publish(fixture, 'page-user', { createdAt: base + 1 }),
      await publish(fixture, 'page-user', { createdAt: base + 2 }),
    ];
    // Uploads are not published files: never listed.
    await upload(service, fixture.key, { bytes: 'a,b\n1,2\n', filename: 'in.csv', type: 'text/csv' }, 'page-user');
    const expected = [...created]
      .sort((a, b) => {
        const at = (file: Published) => created.indexOf(file);
        const time = (file: Published) => (at(file) === 0 ? 0 : at(file) === 4 ? 2 : 1);
        return time(b) - time(a) || (a.storagePath < b.storagePath ? 1 : -1);
      })
      .map((file) => file.storagePath);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const response: Response = await service.fetch(`/v1/artifacts${query}`, {
        headers: agentHeaders(fixture.key, 'page-user'),
      });
      expect(response.status).toBe(200);
      const body: Json = await readJson(response);
      expect(body.items.length).toBeLessThanOrEqual(2);
      seen.push(...body.items.map((item: Json) => item.storagePath));
      cursor = body.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(expected);

    for (const query of ['?limit=0', '?limit=101', '?limit=two', '?cursor=not-a-cursor', '?unknown=1']) {
      const refused = await service.fetch(`/v1/artifacts${query}`, { headers: agentHeaders(fixture.key, 'page-user') });
      expect(refused.status).toBe(400);
      expect((await readJson(refused)).code).toBe('VALIDATION_FAILED');
    }
    const badBody = await post('/v1/artifacts/revoke', fixture.key, 'page-user', { storagePath: 7 });
    expect(badBody.status).toBe(400);
    expect((await readJson(badBody)).code).toBe('VALIDATION_FAILED');
  });
});

describe('operator artifact routes', () => {
  it('lists, revokes, restores and reads downloads of an agent user’s files; revoke-all revokes only that user', async () => {
    const mine = await publish(fixture, 'ops-user');
    const second = await publish(fixture, 'ops-user');
    const bystander = await publish(fixture, 'ops-bystander');
    const base = `/v1/admin/agents/${fixture.agentId}`;

    const listed = await readJson(await service.fetch(`${base}/artifacts?userId=ops-user`, adminRequest('GET')));
    expect(listed.items.map((item: Json) => item.storagePath).sort()).toEqual(
      [mine.storagePath, second.storagePath].sort(),
    );

    const url = await signedUrl(mine.storagePath, 'ops-user');
    await (await fetch(url)).arrayBuffer();
    await downloadsSettled(mine.storagePath, 'ops-user', 1);
    const records = await readJson(
      await service.fetch(
        `${base}/artifacts/downloads?storagePath=${encodeURIComponent(mine.storagePath)}`,
        adminRequest('GET'),
      ),
    );
    expect(records.items).toEqual([expect.objectContaining({ userId: 'ops-user', status: 200, bytes: 64 })]);

    const revoked = await service.fetch(
      `${base}/artifacts/revoke`,
      adminRequest('POST', { storagePath: mine.storagePath }),
    );
    expect(await readJson(revoked)).toMatchObject({ state: 'revoked' });
    expect((await fetch(url)).status).toBe(404);
    const restored = await service.fetch(
      `${base}/artifacts/restore`,
      adminRequest('POST', { storagePath: mine.storagePath }),
    );
    expect(await readJson(restored)).toMatchObject({ state: 'active' });
    expect((await fetch(url)).status).toBe(200);

    // Another agent's operator route does not reach this file.
    const foreign = await service.fetch(
      `/v1/admin/agents/${other.agentId}/artifacts/revoke`,
      adminRequest('POST', { storagePath: mine.storagePath }),
    );
    expect(foreign.status).toBe(404);
    const unknownAgent = await service.fetch(
      '/v1/admin/agents/agt_missing/artifacts?userId=ops-user',
      adminRequest('GET'),
    );
    expect(unknownAgent.status).toBe(404);
    const noUser = await service.fetch(`${base}/artifacts`, adminRequest('GET'));
    expect(noUser.status).toBe(400);
    expect((await readJson(noUser)).code).toBe('VALIDATION_FAILED');
    const noToken = await service.fetch(`${base}/artifacts?userId=ops-user`);
    expect(noToken.status).toBe(401);

    const all = await service.fetch(`${base}/users/ops-user/artifacts/revoke-all`, adminRequest('POST'));
    expect(await readJson(all)).toEqual({ revoked: 2 });
    expect((await resign(mine.storagePath, 'ops-user')).status).toBe(404);
    expect((await resign(second.storagePath, 'ops-user')).status).toBe(404);
    expect((await resign(bystander.storagePath, 'ops-bystander')).status).toBe(200);
    const repeat = await service.fetch(`${base}/users/ops-user/artifacts/revoke-all`, adminRequest('POST'));
    expect(await readJson(repeat)).toEqual({ revoked: 0 });

    // Delete still destroys a revoked file's bytes and row.
    const purge = await service.fetch('/v1/uploads', {
      method: 'DELETE',
      headers: jsonHeaders(fixture.key, 'ops-user'),
      body: JSON.stringify({ storagePaths: [mine.storagePath] }),
    });
    expect(purge.status).toBe(204);
    await expect(service.deps.storage.get(mine.storagePath)).rejects.toThrow(/No stored object/);
    const remaining = await readJson(await service.fetch(`${base}/artifacts?userId=ops-user`, adminRequest('GET')));
    expect(remaining.items.map((item: Json) => item.storagePath)).toEqual([second.storagePath]);
  });
});

describe('download audit retention', () => {
  it('sweeps records older than the retention period and keeps newer ones', async () => {
    const artifact = await publish(fixture, 'retention-user');
    const day = 24 * 60 * 60 * 1000;
    const now = Date.now();
    const row = (id: string, at: number) => ({
      id,
      storage_path: artifact.storagePath,
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: 'retention-user',
      downloaded_at: at,
      client_ip: '127.0.0.1',
      user_agent: null,
      status: 200,
      bytes: 64,
    });
    await service.database.db
      .insertInto('artifact_downloads')
      .values([row('dl_old', now - 91 * day), row('dl_recent', now - 89 * day)])
      .execute();
    expect(await sweepDownloadAudit(service.database.db, service.config.downloadAuditRetentionDays, now)).toBe(1);
    expect((await downloads(artifact.storagePath, 'retention-user')).map((item: Json) => item.id)).toEqual([
      'dl_recent',
    ]);
    expect(await sweepDownloadAudit(service.database.db, 0, now + 1000 * day)).toBe(0);
  });
});
