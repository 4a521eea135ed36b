import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../routes/docs.js';
import { renderOpenApiDocument } from '../src/openapi-document.js';
import { packageRoot } from '../src/package-root.js';
import { startTestService, type TestService } from './support/service.js';

let service: TestService;
let committed: string;

beforeAll(async () => {
  service = await startTestService();
  committed = await readFile(path.join(packageRoot(), OPENAPI_FILE), 'utf8');
});
afterAll(() => service.close());

describe('OpenAPI document', () => {
  it('is up to date with the route schemas (run `npm run openapi` when this fails)', async () => {
    expect(await renderOpenApiDocument()).toBe(committed);
  });

  it('documents every fixed admin route and the shared problem schema', () => {
    const document = JSON.parse(committed);
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/admin/tenants',
        '/v1/admin/tenants/{tenantId}/agents',
        '/v1/admin/agents/{agentId}/keys',
        '/v1/admin/keys/{keyId}',
        '/v1/admin/agents/{agentId}/config',
        '/v1/admin/agents/{agentId}/config/publish',
        '/healthz',
        '/readyz',
        '/metrics',
      ]),
    );
    expect(document.components.schemas.Problem.required).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'code', 'requestId']),
    );
    expect(document.paths['/v1/admin/tenants'].post.responses['401'].content).toHaveProperty(
      'application/problem+json',
    );
    expect(document.components.schemas.AgentConfig.additionalProperties).toBe(false);
  });

  it('is served at /openapi.json exactly as committed', async () => {
    const response = await service.fetch('/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.text()).toBe(committed);
  });

  it('has an interactive reference at /docs whose assets are served locally', async () => {
    const page = await service.fetch('/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((match) => match[1] as string);
    expect(assets).toEqual(
      expect.arrayContaining(['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css', '/docs/init.js']),
    );
    for (const asset of assets) {
      const response = await service.fetch(asset);
      expect(response.status, asset).toBe(200);
      expect((await response.arrayBuffer()).byteLength, asset).toBeGreaterThan(10);
    }
    expect(await (await service.fetch('/docs/init.js')).text()).toContain("url: '/openapi.json'");
    expect((await service.fetch('/docs/assets/..%2Fpackage.json')).status).toBe(404);
  });
});
