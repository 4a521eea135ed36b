import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/agents/config-schema.js';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

/**
 * Without a managed-sandbox integration — `createMordnHandler({ sandboxes: false })`, or a service
 * whose own chat has none — uploads and bootstrap hints stay on the default policy, even for an
 * agent whose published config enables sandboxes: the managed document set never appears.
 */

const MiB = 1024 * 1024;
const ENABLED: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const CSV = 'region,total\nnorth,3\n';

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
  fixture = await createAgentFixture(service.database.db, { published: ENABLED });
});
afterAll(() => service.close());

const handlerFor = (options: { sandboxes?: false } = {}) =>
  createMordnHandler({
    apiKey: fixture.key,
    getUserId: () => 'policy-user',
    selfBaseUrl: service.deps.selfBaseUrl as string,
    ...options,
  });

function uploadRequest(bytes: Uint8Array | string, filename: string): Request {
  const form = new FormData();
  form.set('file', new Blob([typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes]), filename);
  return new Request('http://app.example/api/chat', { method: 'POST', body: form });
}

const bootstrapRequest = () => new Request('http://app.example/api/chat?bootstrap');

describe('createMordnHandler({ sandboxes: false })', () => {
  it('keeps bootstrap on the default picker and size, while the default handler offers the managed set', async () => {
    const managed = (await readJson(await handlerFor().GET(bootstrapRequest()))).features.attachments;
    expect(managed.accept).toEqual(expect.arrayContaining([DOCX, 'text/csv']));
    expect(managed.maxBytes).toBe(10 * MiB);
    const off = (await readJson(await handlerFor({ sandboxes: false }).GET(bootstrapRequest()))).features.attachments;
    expect(off).toEqual({ enabled: true, accept: ['image/*'], maxBytes: 5 * MiB });
  });

  it('keeps uploads on the default policy: a CSV is refused, an image taken', async () => {
    const off = handlerFor({ sandboxes: false });
    const csv = await off.POST(uploadRequest(CSV, 'sales.csv'));
    expect(csv.status).toBe(415);
    expect((await readJson(csv)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect((await off.POST(uploadRequest(PNG_1X1, 'dot.png'))).status).toBe(201);
    // The same upload through a handler with sandboxes is taken.
    expect((await handlerFor().POST(uploadRequest(CSV, 'sales.csv'))).status).toBe(201);
  });
});

describe('a service whose chat has no managed integration', () => {
  it('keeps uploads and bootstrap on the default policy', async () => {
    const bare = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    try {
      // Its own chat reaches the sandbox endpoint only through the loopback origin it listens on.
      bare.deps.selfBaseUrl = undefined;
      const agent = await createAgentFixture(bare.database.db, { published: ENABLED });
      const bootstrap = await bare.fetch('/v1/bootstrap', {
        headers: { Authorization: `Bearer ${agent.key}`, 'X-Chat-User': 'policy-user' },
      });
      expect((await readJson(bootstrap)).features.attachments).toEqual({
        enabled: true,
        accept: ['image/*'],
        maxBytes: 5 * MiB,
      });
      expect((await upload(bare, agent.key, { bytes: CSV, filename: 'sales.csv' }, 'policy-user')).status).toBe(415);
    } finally {
      await bare.close();
    }
  });
});
