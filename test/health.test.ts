import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

describe('probes', () => {
  it('/healthz answers 200 {status: ok} from the server itself, outside request metrics', async () => {
    const response = await service.fetch('/healthz');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await readJson(response)).toEqual({ status: 'ok' });
    expect(response.headers.get('x-request-id')).toBeNull();
    expect((await service.fetch('/healthz', { method: 'HEAD' })).status).toBe(200);
    expect(await (await service.fetch('/metrics')).text()).not.toContain('route="/healthz"');
  });

  it('the app answers /healthz the same way when reached through it', async () => {
    const response = await service.fetch('/healthz?via=app');
    expect(response.status).toBe(200);
    expect(await readJson(response)).toEqual({ status: 'ok' });
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const inProcess = await service.app.request('/healthz');
    expect(await readJson(inProcess)).toEqual({ status: 'ok' });
  });

  it('/readyz reports the database and storage checks', async () => {
    const response = await service.fetch('/readyz');
    expect(response.status).toBe(200);
    expect(await readJson(response)).toEqual({ status: 'ready', checks: { database: 'ok', storage: 'ok' } });
  });

  it('/readyz answers 503 when storage cannot be written, naming the storage check', async () => {
    const broken = await startTestService();
    try {
      // Local storage keeps objects under <data dir>/files: a plain file there makes every write fail.
      const files = path.join(broken.config.dataDir, 'files');
      await rm(files, { recursive: true, force: true });
      await writeFile(files, 'not a directory');
      const response = await broken.fetch('/readyz');
      expect(response.status).toBe(503);
      expect(await readJson(response)).toEqual({
        status: 'unavailable',
        checks: { database: 'ok', storage: 'failed' },
      });
    } finally {
      await broken.close();
    }
  });

  it('/readyz includes the sandbox backend when sandboxes are on, and answers 503 while it is not ready', async () => {
    let ready = true;
    const withSandboxes = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      sandboxReadiness: async () => ready,
    });
    try {
      const healthy = await withSandboxes.fetch('/readyz');
      expect(healthy.status).toBe(200);
      expect(await readJson(healthy)).toEqual({
        status: 'ready',
        checks: { database: 'ok', storage: 'ok', sandbox: 'ok' },
      });
      ready = false;
      const down = await withSandboxes.fetch('/readyz');
      expect(down.status).toBe(503);
      expect(await readJson(down)).toMatchObject({
        status: 'unavailable',
        checks: { database: 'ok', storage: 'ok', sandbox: 'failed' },
      });
    } finally {
      await withSandboxes.close();
    }
  });

  it('/readyz answers 503 while draining', async () => {
    const draining = await startTestService();
    try {
      draining.lifecycle.startDraining();
      const response = await draining.fetch('/readyz');
      expect(response.status).toBe(503);
      expect((await readJson(response)).status).toBe('draining');
    } finally {
      await draining.close();
    }
  });

  it('/readyz answers 503 when the database is gone', async () => {
    const broken = await startTestService();
    try {
      await broken.database.db.destroy();
      const response = await broken.fetch('/readyz');
      expect(response.status).toBe(503);
      expect(await readJson(response)).toEqual({
        status: 'unavailable',
        checks: { database: 'failed', storage: 'ok' },
      });
    } finally {
      await broken.database.target.destroy();
    }
  });
});

describe('/metrics', () => {
  it('counts requests and latency by route pattern and status', async () => {
    await service.fetch('/v1/me', { headers: agentHeaders(fixture.key) });
    await service.fetch('/v1/me', { headers: agentHeaders(fixture.key) });
    await service.fetch('/v1/me');
    await service.fetch('/no/such/path/123');

    const response = await service.fetch('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toContain('mordn_http_requests_total{method="GET",route="/v1/me",status="200"} 2');
    expect(text).toContain('mordn_http_requests_total{method="GET",route="/v1/me",status="401"} 1');
    expect(text).toContain('mordn_http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toMatch(
      /mordn_http_request_duration_seconds_bucket\{le="0.1",method="GET",route="\/v1\/me",status="200"\} 2/,
    );
    expect(text).not.toContain('/no/such/path');
    expect(text).toMatch(/^mordn_http_requests_in_flight 1$/m);
  });
});

describe('errors', () => {
  it('an unknown route is a problem+json 404 with a request id', async () => {
    const response = await service.fetch('/v2/nothing');
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = await readJson(response);
    expect(problem).toEqual({
      type: 'urn:mordn:problem:not-found',
      title: 'Not Found',
      status: 404,
      detail: 'No route for GET /v2/nothing.',
      code: 'NOT_FOUND',
      requestId: response.headers.get('x-request-id'),
    });
  });
});
