import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { storeArtifact } from './support/stored-artifact.js';
import { PNG_1X1, upload } from './support/upload.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

describe('MORDN_METRICS_TOKEN', () => {
  it('is optional, and when set must be at least 16 characters, naming the variable', () => {
    expect(loadConfig({}).metricsToken).toBeUndefined();
    expect(loadConfig({ MORDN_METRICS_TOKEN: METRICS_TOKEN }).metricsToken).toBe(METRICS_TOKEN);
    expect(() => loadConfig({ MORDN_METRICS_TOKEN: 'short-token' })).toThrow(
      'MORDN_METRICS_TOKEN: must be at least 16 characters long',
    );
  });

  it('is a secret: it never appears in a log line', () => {
    expect(loadConfig({ MORDN_METRICS_TOKEN: METRICS_TOKEN }).secretValues).toContain(METRICS_TOKEN);
  });
});

describe('/metrics behind MORDN_METRICS_TOKEN', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ environment: { MORDN_METRICS_TOKEN: METRICS_TOKEN } });
  });
  afterAll(() => service.close());

  it.each([
    ['no Authorization', undefined],
    ['a wrong token', `Bearer ${METRICS_TOKEN}x`],
    ['the admin token', `Bearer ${TEST_ADMIN_TOKEN}`],
    ['a malformed header', METRICS_TOKEN],
  ])('refuses %s with a 401 problem and no metrics', async (_case, authorization) => {
    const response = await service.fetch(
      '/metrics',
      authorization ? { headers: { Authorization: authorization } } : {},
    );
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    const problem = (await readJson(response)) as Record<string, unknown>;
    expect(problem).toMatchObject({ status: 401, code: 'INVALID_METRICS_TOKEN' });
    expect(JSON.stringify(problem)).not.toContain('mordn_http_requests_total');
  });

  it('answers the exposition to its bearer token', async () => {
    const response = await service.fetch('/metrics', { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('mordn_http_requests_total');
    // The refusals above were counted like any other answer.
    const again = await (
      await service.fetch('/metrics', { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(again).toMatch(/^mordn_http_requests_total\{method="GET",route="\/metrics",status="401"\} \d+$/m);
  });
});

describe('/metrics names no tenant, agent, key or user', () => {
  let service: TestService;
  let fixtures: AgentFixture[];
  beforeAll(async () => {
    service = await startTestService();
    fixtures = [await createAgentFixture(service.database.db), await createAgentFixture(service.database.db)];
  });
  afterAll(() => service.close());

  it('after every kind of request of two tenants, open to anyone', async () => {
    const users = ['metrics-user-alpha', 'metrics-user-beta'];
    for (const [index, fixture] of fixtures.entries()) {
      const user = users[index] as string;
      await service.fetch('/v1/me', { headers: agentHeaders(fixture.key, user) });
      const uploaded = await upload(
        service,
        fixture.key,
        { bytes: PNG_1X1, filename: 'p.png', type: 'image/png' },
        user,
      );
      expect(uploaded.status).toBe(201);
      const { url } = (await readJson(uploaded)) as { url: string };
      expect((await fetch(url)).status).toBe(200);
      // A published file, downloaded: artifact downloads are counted in /metrics.
      const artifact = await storeArtifact(
        service,
        { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: user },
        Buffer.from('name,score\nada,3\n'),
        { filename: 'scores.csv', mediaType: 'text/csv' },
      );
      const resigned = await service.fetch('/v1/uploads/resign', {
        method: 'POST',
        headers: { ...agentHeaders(fixture.key, user), 'Content-Type': 'application/json' },
        body: JSON.stringify({ storagePath: artifact.storagePath }),
      });
      const signed = (await readJson(resigned)) as { url: string };
      expect((await fetch(signed.url)).status).toBe(200);
      await service.fetch(`/v1/chats/chat-of-${user}`, { headers: agentHeaders(fixture.key, user) });
      await service.fetch(`/v1/admin/tenants/${fixture.tenantId}/agents`, {
        headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
    }
    const response = await service.fetch('/metrics');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('route="/v1/uploads"');
    expect(text).toMatch(/^mordn_artifact_downloads_total\{status="200"\} 2$/m);
    for (const fixture of fixtures) {
      for (const id of [fixture.tenantId, fixture.agentId, fixture.keyId, fixture.key]) expect(text).not.toContain(id);
    }
    for (const user of users) expect(text).not.toContain(user);
    expect(text).not.toMatch(/\b(tenant|agent|user|key)(_id)?="/);
  });
});
