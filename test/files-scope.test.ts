import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/auth/api-keys.js';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

let service: TestService;
let owner: AgentFixture;
let sameTenantAgent: AgentFixture;
let otherTenant: AgentFixture;
let ownerPath: string;

beforeAll(async () => {
  service = await startTestService();
  owner = await createAgentFixture(service.database.db);
  sameTenantAgent = await createAgentFixture(service.database.db, { tenantId: owner.tenantId });
  otherTenant = await createAgentFixture(service.database.db);
  const response = await upload(service, owner.key, { bytes: PNG_1X1, filename: 'mine.png' }, 'alice');
  ownerPath = (await readJson(response)).storagePath;
});
afterAll(() => service.close());

function post(pathname: string, key: string, body: unknown, userId = 'alice') {
  return service.fetch(pathname, {
    method: 'POST',
    headers: { ...agentHeaders(key, userId), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function remove(key: string, storagePaths: string[], userId = 'alice') {
  return service.fetch('/v1/uploads', {
    method: 'DELETE',
    headers: { ...agentHeaders(key, userId), 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePaths }),
  });
}

/** The problem body minus the per-request id, for comparing refusals. */
async function problemShape(response: Response) {
  const { requestId: _requestId, ...rest } = await readJson(response);
  return { status: response.status, ...rest };
}

describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/uploads/resign',
    permission: 'read',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePath: 'uploads/00000000000000000000000000000000' }),
  },
  () => ({ service, fixture: owner }),
);

describeAgentAuth(
  {
    method: 'DELETE',
    path: '/v1/uploads',
    permission: 'write',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePaths: ['uploads/00000000000000000000000000000000'] }),
    effects: async () => service.database.db.selectFrom('stored_files').select('storage_path').execute(),
  },
  () => ({ service, fixture: owner }),
);

describe('POST /v1/uploads/resign', () => {
  it('signs a fresh URL for the owner (uploads carry no file record)', async () => {
    const response = await post('/v1/uploads/resign', owner.key, { storagePath: ownerPath });
    expect(response.status).toBe(200);
    const body = await readJson(response);
    expect(Object.keys(body)).toEqual(['url']);
    const download = await fetch(body.url);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(PNG_1X1);
  });

  it('answers another user, agent or tenant exactly as for a missing path', async () => {
    const missing = await problemShape(
      await post('/v1/uploads/resign', owner.key, { storagePath: 'uploads/0123456789abcdef0123456789abcdef' }),
    );
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const attempts = [
      post('/v1/uploads/resign', owner.key, { storagePath: ownerPath }, 'bob'),
      post('/v1/uploads/resign', owner.key, { storagePath: ownerPath }, 'Alice'),
      post('/v1/uploads/resign', sameTenantAgent.key, { storagePath: ownerPath }),
      post('/v1/uploads/resign', otherTenant.key, { storagePath: ownerPath }),
    ];
    for (const response of await Promise.all(attempts)) expect(await problemShape(response)).toEqual(missing);
  });

  it.each([
    ['a traversal', (p: string) => `../${p}`],
    ['a trailing space', (p: string) => `${p} `],
    ['a changed case', (p: string) => p.toUpperCase()],
    ['percent-encoding', (p: string) => p.replace('/', '%2F')],
    ['a prefix', (p: string) => p.slice(0, -4)],
    ['a suffix', (p: string) => `${p}/x`],
  ])('answers %s of a real path with the same 404', async (_name, variant) => {
    const missing = await problemShape(
      await post('/v1/uploads/resign', owner.key, { storagePath: 'uploads/0123456789abcdef0123456789abcdef' }),
    );
    const response = await post('/v1/uploads/resign', owner.key, { storagePath: variant(ownerPath) });
    expect(await problemShape(response)).toEqual(missing);
  });

  it('signs a batch in order, one result per path', async () => {
    const response = await post('/v1/uploads/resign', owner.key, {
      storagePaths: [ownerPath, 'uploads/0123456789abcdef0123456789abcdef', ownerPath],
    });
    expect(response.status).toBe(200);
    const { results } = await readJson(response);
    expect(results).toEqual([
      { storagePath: ownerPath, url: expect.stringContaining('/v1/files/') },
      { storagePath: 'uploads/0123456789abcdef0123456789abcdef', error: { status: 404, code: 'NOT_FOUND' } },
      { storagePath: ownerPath, url: expect.stringContaining('/v1/files/') },
    ]);
    const asBob = await readJson(await post('/v1/uploads/resign', owner.key, { storagePaths: [ownerPath] }, 'bob'));
    expect(asBob.results).toEqual([{ storagePath: ownerPath, error: { status: 404, code: 'NOT_FOUND' } }]);
  });

  it('refuses more than 100 paths and an empty batch', async () => {
    const tooMany = await post('/v1/uploads/resign', owner.key, { storagePaths: Array(101).fill(ownerPath) });
    expect(tooMany.status).toBe(400);
    expect((await post('/v1/uploads/resign', owner.key, { storagePaths: [] })).status).toBe(400);
  });
});

describe('signed download URLs', () => {
  it('refuse a tampered URL with 403 and serve the untouched one', async () => {
    const { url } = await readJson(await post('/v1/uploads/resign', owner.key, { storagePath: ownerPath }));
    const signed = new URL(url);
    const tampered = new URL(url);
    tampered.searchParams.set('filename', 'other.png');
    expect((await fetch(tampered)).status).toBe(403);
    const wrongType = new URL(url);
    wrongType.searchParams.set('type', 'text/html');
    expect((await fetch(wrongType)).status).toBe(403);
    const ok = await fetch(signed);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/png');
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    expect(ok.headers.get('content-disposition')).toMatch(/^attachment;/);
  });
});

describe('DELETE /v1/uploads', () => {
  it('deletes object then row; a second delete is harmless', async () => {
    const { storagePath } = await readJson(
      await upload(service, owner.key, { bytes: PNG_1X1, filename: 'x.png' }, 'alice'),
    );
    const { url } = await readJson(await post('/v1/uploads/resign', owner.key, { storagePath }));
    expect((await remove(owner.key, [storagePath])).status).toBe(204);
    expect((await post('/v1/uploads/resign', owner.key, { storagePath })).status).toBe(404);
    expect((await fetch(url)).status).toBe(404);
    expect((await remove(owner.key, [storagePath])).status).toBe(204);
  });

  it("never deletes someone else's file", async () => {
    expect((await remove(owner.key, [ownerPath], 'bob')).status).toBe(204);
    expect((await remove(otherTenant.key, [ownerPath])).status).toBe(204);
    expect((await post('/v1/uploads/resign', owner.key, { storagePath: ownerPath })).status).toBe(200);
  });

  it('keeps the rows when storage refuses, and succeeds on retry', async () => {
    const { storagePath } = await readJson(
      await upload(service, owner.key, { bytes: PNG_1X1, filename: 'y.png' }, 'alice'),
    );
    // Make the object undeletable for real: a non-empty directory where the file was.
    const objectPath = path.join(service.config.dataDir, 'files', storagePath);
    await rm(objectPath);
    await mkdir(objectPath);
    await writeFile(path.join(objectPath, 'blocker'), 'x');
    const failed = await remove(owner.key, [storagePath]);
    expect(failed.status).toBe(503);
    expect((await readJson(failed)).code).toBe('STORAGE_UNAVAILABLE');
    const rows = await service.database.db
      .selectFrom('stored_files')
      .select('storage_path')
      .where('storage_path', '=', storagePath)
      .execute();
    expect(rows).toHaveLength(1);

    await rm(objectPath, { recursive: true });
    expect((await remove(owner.key, [storagePath])).status).toBe(204);
    const after = await service.database.db
      .selectFrom('stored_files')
      .select('storage_path')
      .where('storage_path', '=', storagePath)
      .execute();
    expect(after).toEqual([]);
  });

  it('needs the write permission', async () => {
    const reader = await createApiKey(service.database.db, owner.agentId, ['read']);
    expect((await remove(reader.key, [ownerPath])).status).toBe(403);
  });
});
