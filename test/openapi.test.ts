import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../routes/docs.js';
import { ERROR_STATUS } from '../src/errors.js';
import { ALL_UPLOAD_TYPES } from '../src/media-types.js';
import { renderOpenApiDocument } from '../src/openapi-document.js';
import { packageRoot } from '../src/package-root.js';
import { createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

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

  it('documents every problem code the service has', () => {
    const document = JSON.parse(committed);
    expect(document.components.schemas.Problem.properties.code.enum.sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });

  it('documents chat history as UI messages whose parts are a union told apart by `type`', () => {
    const { schemas } = JSON.parse(committed).components;
    const resolve = (schema: Json): Json =>
      schema.$ref ? schemas[String(schema.$ref).split('/').pop() as string] : schema;
    const history = resolve(
      JSON.parse(committed).paths['/v1/chats/{chatId}'].get.responses['200'].content['application/json'].schema,
    );
    const message = resolve(history.properties.messages.items);
    expect(message.required).toEqual(expect.arrayContaining(['id', 'role', 'parts']));
    const union = resolve(message.properties.parts.items);
    const alternatives: Json[] = union.oneOf.map(resolve);
    // Each alternative names its `type` as one value or one prefix, and no two can match one part.
    const names = alternatives.flatMap((alternative) => alternative.properties.type.enum ?? []);
    const prefixes = alternatives.flatMap((alternative) => alternative.properties.type.pattern ?? []);
    for (const alternative of alternatives) {
      expect(alternative.required).toContain('type');
      expect((alternative.properties.type.enum?.length ?? 0) + (alternative.properties.type.pattern ? 1 : 0)).toBe(1);
    }
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['text', 'reasoning', 'file', 'step-start', 'dynamic-tool']));
    expect(prefixes.sort()).toEqual(['^data-', '^tool-']);
    for (const name of names) {
      const overlapping = prefixes.filter((prefix) => new RegExp(prefix).test(name));
      expect(overlapping, name).toEqual([]);
    }

    const file = schemas.FileUIPart;
    expect(file.required).toEqual(expect.arrayContaining(['type', 'mediaType', 'url']));
    expect(file.properties.unavailable.enum).toEqual([true]);
    expect(Object.keys(file.properties)).toEqual(expect.arrayContaining(['filename', 'size', 'storagePath']));
    expect(file.properties.url.description).toContain('""');
    expect(schemas.TextUIPart.required).toEqual(expect.arrayContaining(['type', 'text']));
    for (const tool of [schemas.DynamicToolUIPart, schemas.ToolUIPart]) {
      expect(tool.required).toEqual(expect.arrayContaining(['type', 'toolCallId', 'state']));
      expect(tool.properties.state.enum).toEqual(expect.arrayContaining(['output-available', 'output-error']));
    }
    expect(schemas.DynamicToolUIPart.required).toContain('toolName');
    const interrupted = resolve(message.properties.metadata).properties.mordn.properties.interrupted;
    expect(interrupted.properties.reason.enum).toEqual(['stop', 'disconnect', 'timeout', 'failed']);
  });

  it('documents the 405 that GET and DELETE /v1/sandbox/mcp answer, as they answer it', async () => {
    const operations = JSON.parse(committed).paths['/v1/sandbox/mcp'];
    for (const method of ['get', 'delete'] as const) {
      const documented = operations[method]?.responses?.['405'];
      expect(documented, method).toBeDefined();
      expect(documented.content).toHaveProperty('application/problem+json');
      expect(documented.headers).toHaveProperty('Allow');

      const response = await service.fetch('/v1/sandbox/mcp', {
        method: method.toUpperCase(),
        headers: { Accept: 'text/event-stream' },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect((await readJson(response)).code).toBe('METHOD_NOT_ALLOWED');
    }
    expect(operations.post.responses).toHaveProperty('200');
  });

  it('documents the exact content types and headers of /v1/files downloads, as a download sends them', async () => {
    const download = JSON.parse(committed).paths['/v1/files/{kind}/{id}'].get.responses['200'];
    expect(Object.keys(download.content).sort()).toEqual([...ALL_UPLOAD_TYPES].sort());
    expect(download.content).not.toHaveProperty('application/octet-stream');

    const fixture = await createAgentFixture(service.database.db);
    const uploaded = await readJson(
      await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'dot.png' }, 'alice'),
    );
    const response = await fetch(uploaded.url);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(Object.keys(download.content)).toContain(response.headers.get('content-type'));
    for (const [name, header] of Object.entries<Json>(download.headers)) {
      const sent = response.headers.get(name);
      expect(sent, name).not.toBeNull();
      // A fixed header documents its exact value, in backticks.
      const fixed = /^`([^`]+)`\.$/.exec(header.description)?.[1];
      if (fixed) expect(sent, name).toBe(fixed);
    }
    expect(Object.keys(download.headers)).toEqual(
      expect.arrayContaining([
        'Content-Disposition',
        'X-Content-Type-Options',
        'Content-Security-Policy',
        'Cache-Control',
        'Content-Length',
      ]),
    );
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
