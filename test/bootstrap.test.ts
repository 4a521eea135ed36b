import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

const MiB = 1024 * 1024;
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
let service: TestService;
let readinessCalls = 0;
let ready = true;

beforeAll(async () => {
  service = await startTestService({
    environment: { MORDN_SANDBOX_ENABLED: 'true' },
    sandboxReadiness: async () => {
      readinessCalls += 1;
      return ready;
    },
  });
});
afterAll(() => service.close());

async function bootstrap(fixture: AgentFixture, userId = 'user-1') {
  const response = await service.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key, userId) });
  expect(response.status).toBe(200);
  return (await readJson(response)).features.attachments;
}

let fixtureForSuite: AgentFixture;
beforeAll(async () => {
  fixtureForSuite = await createAgentFixture(service.database.db);
});
describeAgentAuth({ method: 'GET', path: '/v1/bootstrap', permission: 'read' }, () => ({
  service,
  fixture: fixtureForSuite,
}));

describe('GET /v1/bootstrap', () => {
  it('keeps the default image/* picker (5 MiB) for an agent without sandboxes, without any sandbox status work', async () => {
    const fixture = await createAgentFixture(service.database.db);
    const before = readinessCalls;
    const features = await bootstrap(fixture);
    expect(features).toEqual({ enabled: true, accept: ['image/*'], maxBytes: 5 * MiB });
    expect(readinessCalls).toBe(before);
  });

  it('keeps an agent’s own picker types, and names the image types an operator narrowed', async () => {
    const own = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, attachments: { accept: ['image/png', 'application/pdf', '.csv'] } },
    });
    expect((await bootstrap(own)).accept).toEqual(['image/png', 'application/pdf']);
    const narrowed = await startTestService({ environment: { MORDN_UPLOAD_TYPES: 'image/png,application/pdf' } });
    try {
      const fixture = await createAgentFixture(narrowed.database.db);
      const response = await narrowed.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key) });
      expect((await readJson(response)).features.attachments.accept).toEqual(['image/png']);
    } finally {
      await narrowed.close();
    }
  });

  it('adds the managed document set when the published flag, operator and backend all allow it', async () => {
    const fixture = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
    });
    const before = readinessCalls;
    const features = await bootstrap(fixture);
    expect(features.maxBytes).toBe(10 * MiB);
    expect(features.accept).toEqual(expect.arrayContaining([DOCX, '.docx', 'text/csv', '.csv', 'application/json']));
    expect(readinessCalls).toBe(before + 1);
  });

  it('keeps the default set while the backend is not ready, or for an anon: user', async () => {
    const fixture = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
    });
    ready = false;
    try {
      expect(await bootstrap(fixture)).toEqual({ enabled: true, accept: ['image/*'], maxBytes: 5 * MiB });
    } finally {
      ready = true;
    }
    expect((await bootstrap(fixture, 'anon:visitor')).accept).toEqual(['image/*']);
  });

  it('keeps the default set when the request turns sandboxes off, without any sandbox status work', async () => {
    const fixture = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
    });
    const before = readinessCalls;
    const response = await service.fetch('/v1/bootstrap', {
      headers: { ...agentHeaders(fixture.key), 'X-Mordn-Sandboxes': 'off' },
    });
    expect((await readJson(response)).features.attachments).toEqual({
      enabled: true,
      accept: ['image/*'],
      maxBytes: 5 * MiB,
    });
    expect(readinessCalls).toBe(before);
  });

  it('keeps the default policy while the backend check fails, instead of failing the request', async () => {
    const failing = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      sandboxReadiness: async () => {
        throw new Error('probe crashed');
      },
    });
    try {
      const fixture = await createAgentFixture(failing.database.db, {
        published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
      });
      const response = await failing.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key) });
      expect(response.status).toBe(200);
      expect((await readJson(response)).features.attachments).toEqual({
        enabled: true,
        accept: ['image/*'],
        maxBytes: 5 * MiB,
      });
      const status = await failing.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key) });
      expect(await readJson(status)).toEqual({ enabled: true, available: false });
      const csv = await upload(failing, fixture.key, { bytes: 'a,b\n1,2\n', filename: 'data.csv' });
      expect(csv.status).toBe(415);
      const png = await upload(failing, fixture.key, { bytes: PNG_1X1, filename: 'dot.png' });
      expect(png.status).toBe(201);
    } finally {
      await failing.close();
    }
  });

  it('never lets a draft widen what is offered', async () => {
    const fixture = await createAgentFixture(service.database.db);
    const { saveDraftConfig } = await import('../src/agents/agent-configs.js');
    await saveDraftConfig(service.database.db, fixture.agentId, {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true } },
    });
    expect((await bootstrap(fixture)).accept).not.toContain(DOCX);
  });

  it('intersects narrower picker preferences and honours the attach flag', async () => {
    const narrow = await createAgentFixture(service.database.db, {
      published: {
        schemaVersion: 1,
        attachments: { accept: ['image/png', '.csv', 'application/zip'], maxBytes: 2 * MiB },
        runtime: { sandbox: { enabled: true } },
      },
    });
    expect(await bootstrap(narrow)).toEqual({
      enabled: true,
      accept: ['image/png', 'text/csv', '.csv'],
      maxBytes: 2 * MiB,
    });

    const off = await createAgentFixture(service.database.db, {
      published: { schemaVersion: 1, attachments: { enabled: false } },
    });
    expect(await bootstrap(off)).toEqual({ enabled: false, accept: [], maxBytes: 0 });
  });
});

describe('without the operator switch', () => {
  it('offers only the default set even to an enabled agent, without calling the backend', async () => {
    let calls = 0;
    const closed = await startTestService({
      sandboxReadiness: async () => {
        calls += 1;
        return true;
      },
    });
    try {
      const fixture = await createAgentFixture(closed.database.db, {
        published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
      });
      const response = await closed.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key) });
      expect((await readJson(response)).features.attachments.maxBytes).toBe(5 * MiB);
      expect(calls).toBe(0);
    } finally {
      await closed.close();
    }
  });
});
