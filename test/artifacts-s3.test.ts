import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import {
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { storeArtifact } from './support/stored-artifact.js';
import { PNG_1X1, upload } from './support/upload.js';

let s3: TestS3Server;
let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  s3 = await startS3Server();
  for (const [name, value] of Object.entries(s3CredentialsEnvironment(s3))) vi.stubEnv(name, value);
  service = await startTestService({
    environment: { ...s3StorageEnvironment(s3), MORDN_TRUSTED_PROXIES: '127.0.0.0/8, 10.0.0.0/8' },
  });
  fixture = await createAgentFixture(service.database.db);
});
afterAll(async () => {
  await service?.close();
  await s3?.close();
  vi.unstubAllEnvs();
});

function publish(userId: string): Promise<{ storagePath: string; bytes: Buffer }> {
  return storeArtifact(service, { tenantId: fixture.tenantId, agentId: fixture.agentId, userId }, randomBytes(4096), {
    filename: 'data.json',
    mediaType: 'application/json',
  });
}

function post(path: string, userId: string, body: unknown): Promise<Response> {
  return service.fetch(path, {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, userId), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function records(storagePath: string, userId: string, count: number): Promise<Json[]> {
  return pollUntil(
    async () =>
      (
        await readJson(
          await service.fetch(`/v1/artifacts/downloads?storagePath=${encodeURIComponent(storagePath)}`, {
            headers: agentHeaders(fixture.key, userId),
          }),
        )
      ).items,
    (items: Json[]) => items.length >= count,
    { timeoutMs: 10_000 },
  );
}

describe('artifacts on S3 storage', () => {
  it('hands out the service URL, which checks the registry and redirects to a presigned URL living at most 60 s', async () => {
    const artifact = await publish('s3-user');
    const resigned = await readJson(await post('/v1/uploads/resign', 's3-user', { storagePath: artifact.storagePath }));
    expect(resigned.url.startsWith(`${service.url}/v1/files/artifacts/`)).toBe(true);
    expect(resigned.file.url).toBe(resigned.url);
    expect(resigned.url).not.toContain('X-Amz-');

    const redirect = await fetch(resigned.url, { redirect: 'manual', headers: { 'User-Agent': 's3-probe' } });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('cache-control')).toBe('no-store');
    const location = new URL(redirect.headers.get('location') ?? '');
    expect(location.origin).toBe(s3.endpoint);
    expect(Number(location.searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(60);
    expect(location.searchParams.get('response-content-disposition')).toContain('attachment');

    const followed = await fetch(resigned.url);
    expect(followed.status).toBe(200);
    expect(Buffer.from(await followed.arrayBuffer())).toEqual(artifact.bytes);

    const revoked = await post('/v1/artifacts/revoke', 's3-user', { storagePath: artifact.storagePath });
    expect(revoked.status).toBe(200);
    const refused = await fetch(resigned.url, { redirect: 'manual' });
    expect(refused.status).toBe(404);
    expect((await readJson(refused)).code).toBe('NOT_FOUND');
    expect((await post('/v1/uploads/resign', 's3-user', { storagePath: artifact.storagePath })).status).toBe(404);

    await post('/v1/artifacts/restore', 's3-user', { storagePath: artifact.storagePath });
    const back = await fetch(resigned.url);
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer())).toEqual(artifact.bytes);

    const audit = await records(artifact.storagePath, 's3-user', 4);
    expect(audit.map((record: Json) => [record.status, record.bytes])).toEqual([
      [302, null],
      [404, null],
      [302, null],
      [302, null],
    ]);
    expect(audit.at(-1)).toMatchObject({ userId: 's3-user', userAgent: 's3-probe', tenantId: fixture.tenantId });
  });

  it('reads the client from X-Forwarded-For only through trusted proxies, skipping trusted hops', async () => {
    const artifact = await publish('proxy-user');
    const { url } = await readJson(
      await post('/v1/uploads/resign', 'proxy-user', { storagePath: artifact.storagePath }),
    );
    // The peer (127.0.0.1) and 10.0.0.9 are trusted: the client is the first untrusted hop from the right.
    await fetch(url, { redirect: 'manual', headers: { 'X-Forwarded-For': '203.0.113.50, 198.51.100.7, 10.0.0.9' } });
    const [record] = await records(artifact.storagePath, 'proxy-user', 1);
    expect(record.clientIp).toBe('198.51.100.7');
  });

  it('leaves uploads on presigned bucket URLs and serves no upload through the service route', async () => {
    const uploaded = await readJson(
      await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'p.png' }, 'up-user'),
    );
    const url = new URL(uploaded.url);
    expect(url.origin).toBe(s3.endpoint);
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBe(service.config.downloadUrlTtlSeconds);
    const direct = await fetch(uploaded.url);
    expect(direct.status).toBe(200);
    expect(new Uint8Array(await direct.arrayBuffer())).toEqual(PNG_1X1);
    const forged = await fetch(
      `${service.url}/v1/files/${uploaded.storagePath}?expires=1&filename=p.png&type=image/png&signature=x`,
    );
    expect(forged.status).toBe(403);
  });
});
