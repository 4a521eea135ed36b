import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { connectEra, MCP_ERAS } from './support/mcp-eras.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

async function workspaceState(service: TestService) {
  const rows = await service.database.db.selectFrom('workspaces').select('id').execute();
  const directories = await readdir(path.join(service.config.dataDir, 'workspaces')).catch(() => []);
  return { rows: rows.length, directories: directories.length };
}

async function status(service: TestService, fixture: AgentFixture, userId = 'user-1') {
  const response = await service.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key, userId) });
  expect(response.status).toBe(200);
  return readJson(response);
}

describe('GET /v1/sandbox/status with the operator switch on', () => {
  let service: TestService;
  let enabled: AgentFixture;
  let disabled: AgentFixture;
  let excludedTenant: AgentFixture;

  beforeAll(async () => {
    service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    enabled = await createAgentFixture(service.database.db, { published: ENABLED });
    disabled = await createAgentFixture(service.database.db);
    excludedTenant = await createAgentFixture(service.database.db, { published: ENABLED });
  });
  afterAll(() => service.close());

  describeAgentAuth(
    {
      method: 'GET',
      path: '/v1/sandbox/status',
      permission: 'read',
      rejectsAnonymous: true,
      effects: () => workspaceState(service),
    },
    () => ({ service, fixture: enabled }),
  );

  it('answers exactly {enabled, available} and provisions nothing', async () => {
    const before = await workspaceState(service);
    expect(await status(service, enabled)).toStrictEqual({ enabled: true, available: true });
    expect(await status(service, disabled)).toStrictEqual({ enabled: false, available: false });
    expect(await workspaceState(service)).toEqual(before);
  });

  it('ignores an enabled draft: only the published config counts', async () => {
    const { saveDraftConfig } = await import('../src/agents/agent-configs.js');
    await saveDraftConfig(service.database.db, disabled.agentId, ENABLED);
    expect(await status(service, disabled)).toStrictEqual({ enabled: false, available: false });
  });

  it('keeps a closed gate closed for tools: no workspace, an isError result', async () => {
    const before = await workspaceState(service);
    for (const era of MCP_ERAS) {
      const client = await connectEra(era, service, disabled.key);
      try {
        const result = await client.callTool('sandbox_exec', { command: 'touch /workspace/should-not-exist' });
        expect(result, era.name).toEqual({
          isError: true,
          value: { error: { code: 'SANDBOX_UNAVAILABLE', message: expect.any(String) } },
        });
      } finally {
        await client.close();
      }
    }
    expect(await workspaceState(service)).toEqual(before);
  });

  it('honours the tenant allow-list', async () => {
    const restricted = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_TENANTS: 'ten_someone_else' },
    });
    try {
      const fixture = await createAgentFixture(restricted.database.db, { published: ENABLED });
      expect(await status(restricted, fixture)).toStrictEqual({ enabled: true, available: false });
      for (const era of MCP_ERAS) {
        const client = await connectEra(era, restricted, fixture.key);
        try {
          const result = await client.callTool('sandbox_exec', { command: 'true' });
          expect(result.value.error.code, era.name).toBe('SANDBOX_UNAVAILABLE');
        } finally {
          await client.close();
        }
      }
      expect(await workspaceState(restricted)).toEqual({ rows: 0, directories: 0 });
    } finally {
      await restricted.close();
    }
    expect(excludedTenant.tenantId).toMatch(/^ten_/);
  });

  it('reports unavailable while the backend is not ready', async () => {
    let ready = false;
    const flaky = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      sandboxReadiness: async () => ready,
    });
    try {
      const fixture = await createAgentFixture(flaky.database.db, { published: ENABLED });
      expect(await status(flaky, fixture)).toStrictEqual({ enabled: true, available: false });
      ready = true;
      expect(await status(flaky, fixture)).toStrictEqual({ enabled: true, available: true });
    } finally {
      await flaky.close();
    }
  });
});

describe('GET /v1/sandbox/status with the operator switch off', () => {
  it('is enabled but never available, and tools do nothing', async () => {
    const service = await startTestService();
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      expect(await status(service, fixture)).toStrictEqual({ enabled: true, available: false });
      for (const era of MCP_ERAS) {
        const client = await connectEra(era, service, fixture.key);
        try {
          expect((await client.callTool('sandbox_exec', { command: 'true' })).value.error.code, era.name).toBe(
            'SANDBOX_UNAVAILABLE',
          );
        } finally {
          await client.close();
        }
      }
      expect(await workspaceState(service)).toEqual({ rows: 0, directories: 0 });
    } finally {
      await service.close();
    }
  });
});

/** The start-up warnings of a service that runs with weak limits. */
function weakLimitWarnings(logs: string[]): Array<{ level: number; msg: string }> {
  return logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === 40 && line.msg.startsWith('MORDN_SANDBOX_WEAK_LIMITS=true'));
}

describe('a host that cannot enforce the sandbox limits', () => {
  it('reports sandboxes unavailable and says why in /readyz, unless weak limits are chosen', async () => {
    const strict = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CGROUP_ROOT: '/nonexistent/cgroup' },
    });
    try {
      const fixture = await createAgentFixture(strict.database.db, { published: ENABLED });
      expect(await status(strict, fixture)).toStrictEqual({ enabled: true, available: false });
      const ready = await strict.fetch('/readyz');
      expect(ready.status).toBe(503);
      const body = (await readJson(ready)) as { checks: Record<string, string>; reasons?: Record<string, string> };
      expect(body.checks.sandbox).toBe('failed');
      expect(body.reasons?.sandbox).toMatch(
        /cgroup root \/nonexistent\/cgroup does not exist.*MORDN_SANDBOX_WEAK_LIMITS/,
      );
      // Nothing else failed, and no reason is given for what did not.
      expect(Object.keys(body.reasons ?? {})).toEqual(['sandbox']);
      for (const era of MCP_ERAS) {
        const client = await connectEra(era, strict, fixture.key, 'user-1');
        try {
          const refused = await client.callTool('sandbox_exec', { command: 'echo ran' });
          expect(refused.isError, era.name).toBe(true);
          expect(refused.value).not.toMatchObject({ stdout: 'ran\n' });
        } finally {
          await client.close();
        }
      }
    } finally {
      await strict.close();
    }

    const weak = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_CGROUP_ROOT: '/nonexistent/cgroup',
        MORDN_SANDBOX_WEAK_LIMITS: 'true',
      },
    });
    try {
      const fixture = await createAgentFixture(weak.database.db, { published: ENABLED });
      expect(await status(weak, fixture)).toStrictEqual({ enabled: true, available: true });
      expect((await weak.fetch('/readyz')).status).toBe(200);
      // The operator's choice is said once, at start-up, as a warning naming what is not held.
      const warnings = weakLimitWarnings(weak.logs);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.msg).toMatch(/per-process limits only/);
    } finally {
      await weak.close();
    }
    expect(weakLimitWarnings(strict.logs)).toEqual([]);
  });
});
