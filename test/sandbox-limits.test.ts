import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepIdleWorkspaces } from '../src/sandbox/retention.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { connectEra, MCP_ERAS, rawEraMcp } from './support/mcp-eras.js';
import { pollUntil } from './support/poll.js';
import { awayFromWindowEdge } from './support/rate-window.js';
import { startTestService, type TestService } from './support/service.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(MCP_ERAS)('rate limits and concurrency (counted in the database): $name', (era) => {
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    service = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_CALLS_PER_MINUTE: '4',
        MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '1',
      },
    });
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });
  afterAll(() => service.close());

  it('answers 429 with Retry-After past the per-user limit, other users unaffected', async () => {
    await awayFromWindowEdge(10_000);
    for (let call = 1; call <= 4; call += 1) {
      const response = await rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'true' }, call), {
        userId: 'limited',
      });
      expect(response.status, `call ${call}`).toBe(200);
    }
    const refused = await rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'true' }, 5), {
      userId: 'limited',
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await readJson(refused)).code).toBe('RATE_LIMITED');
    const other = await rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'true' }, 6), {
      userId: 'unlimited',
    });
    expect(other.status).toBe(200);
  });

  it('answers 429 while the workspace is busy, and frees the slot afterwards', async () => {
    const first = rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'sleep 2' }, 1), {
      userId: 'busy',
    });
    await sleep(700);
    const second = await rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'true' }, 2), {
      userId: 'busy',
    });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    expect((await first).status).toBe(200);
    const third = await rawEraMcp(service, fixture.key, era.call('sandbox_exec', { command: 'true' }, 3), {
      userId: 'busy',
    });
    expect(third.status).toBe(200);
    const leases = await service.database.db.selectFrom('workspace_leases').selectAll().execute();
    expect(leases).toEqual([]);
  });
});

describe.each(MCP_ERAS)('execution policy: $name', (era) => {
  it('refuses tools outside the operator allow-list before they run', async () => {
    const service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_TOOLS: 'sandbox_list_files,sandbox_read_file' },
    });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const client = await connectEra(era, service, fixture.key);
      try {
        const denied = await client.callTool('sandbox_exec', { command: 'touch made-it' });
        expect(denied.value.error.code).toBe('POLICY_DENIED');
        const listed = await client.callTool('sandbox_list_files', {});
        expect(listed.isError).toBe(false);
        expect(listed.value.entries).toEqual([]);
      } finally {
        await client.close();
      }
    } finally {
      await service.close();
    }
  });

  it('fails closed when the custom hook throws or says no', async () => {
    const seen: string[] = [];
    const service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      authorizeToolCall: (call) => {
        seen.push(`${call.tool}:${call.principal.userId}`);
        if (call.tool === 'sandbox_write_file') throw new Error('policy backend down');
        return call.tool !== 'sandbox_exec' || !String(call.input.command).includes('rm ');
      },
    });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const client = await connectEra(era, service, fixture.key, 'carol');
      try {
        expect((await client.callTool('sandbox_write_file', { path: 'x.txt', content: 'x' })).value.error.code).toBe(
          'POLICY_DENIED',
        );
        expect((await client.callTool('sandbox_exec', { command: 'rm -rf x.txt' })).value.error.code).toBe(
          'POLICY_DENIED',
        );
        expect((await client.callTool('sandbox_exec', { command: 'ls x.txt 2>&1; true' })).value.stdout).toMatch(
          /No such file/,
        );
      } finally {
        await client.close();
      }
      expect(seen).toEqual(['sandbox_write_file:carol', 'sandbox_exec:carol', 'sandbox_exec:carol']);
    } finally {
      await service.close();
    }
  });
});

describe.each(MCP_ERAS)('abort: $name', (era) => {
  it('kills the remote process tree when the HTTP request is aborted', async () => {
    const service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const client = await connectEra(era, service, fixture.key, 'dave');
      const controller = new AbortController();
      const running = rawEraMcp(
        service,
        fixture.key,
        era.call('sandbox_exec', {
          command: '(while true; do date +%s%N >> heartbeat; sleep 0.1; done) & sleep 30; touch finished',
          timeoutSeconds: 60,
        }),
        { userId: 'dave', signal: controller.signal },
      ).catch((error: Error) => error);
      try {
        // Aborted once the background loop is seen running (a loaded machine makes the workspace slowly).
        const beating = await pollUntil(
          async () => Number((await client.callTool('sandbox_exec', { command: 'wc -l < heartbeat' })).value.stdout),
          (lines) => lines > 2,
          { timeoutMs: 15_000, intervalMs: 200 },
        );
        expect(beating).toBeGreaterThan(2);
        controller.abort();
        expect(await running).toBeInstanceOf(Error);
        await sleep(1_000);
        const first = await client.callTool('sandbox_exec', { command: 'wc -l < heartbeat' });
        await sleep(600);
        const second = await client.callTool('sandbox_exec', { command: 'wc -l < heartbeat; ls finished 2>&1; true' });
        expect(second.value.stdout.split('\n')[0]).toBe(first.value.stdout.trim());
        expect(second.value.stdout).toMatch(/No such file/);
      } finally {
        await client.close();
      }
      const leases = await service.database.db.selectFrom('workspace_leases').selectAll().execute();
      expect(leases).toEqual([]);
    } finally {
      await service.close();
    }
  });
});

describe('isolation under load', () => {
  it('answers 50 parallel calls from two tenants each with only its own output', async () => {
    const service = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '64',
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      },
    });
    try {
      const tenants = [
        await createAgentFixture(service.database.db, { published: ENABLED }),
        await createAgentFixture(service.database.db, { published: ENABLED }),
      ];
      const clients = await Promise.all(tenants.map((tenant) => connectSdkClient(service, tenant.key, 'same-user-id')));
      try {
        await Promise.all(
          clients.map((client, index) =>
            callTool(client, 'sandbox_write_file', { path: 'who.txt', content: `tenant-${index}` }),
          ),
        );
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, call) => {
            const index = call % 2;
            return callTool(clients[index] as (typeof clients)[number], 'sandbox_exec', {
              command: `cat who.txt; echo :${call}`,
            }).then((result) => ({ index, call, result }));
          }),
        );
        for (const { index, call, result } of results) {
          expect(result.isError).toBe(false);
          expect(result.value.stdout).toBe(`tenant-${index}:${call}\n`);
        }
      } finally {
        await Promise.all(clients.map((client) => client.close()));
      }
    } finally {
      await service.close();
    }
  });
});

describe('retention', () => {
  it('deletes workspaces idle past the retention period, and only those', async () => {
    const service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      for (const user of ['old-user', 'recent-user']) {
        const client = await connectSdkClient(service, fixture.key, user);
        await callTool(client, 'sandbox_write_file', { path: 'keep.txt', content: user });
        await client.close();
      }
      const rows = await service.database.db.selectFrom('workspaces').select(['id', 'user_id']).execute();
      const old = rows.find((row) => row.user_id === 'old-user');
      const recent = rows.find((row) => row.user_id === 'recent-user');
      await service.database.db
        .updateTable('workspaces')
        .set({ last_used_at: Date.now() - 40 * 24 * 60 * 60 * 1000 })
        .where('id', '=', old?.id as string)
        .execute();
      const runtime = service.deps.sandbox;
      if (!runtime) throw new Error('sandbox runtime missing');
      const removed = await sweepIdleWorkspaces({
        db: service.database.db,
        backend: runtime.backend,
        logger: service.deps.logger,
        retentionDays: 30,
      });
      expect(removed).toBe(1);
      const left = await service.database.db.selectFrom('workspaces').select('user_id').execute();
      expect(left).toEqual([{ user_id: 'recent-user' }]);
      const workspacesDir = path.join(service.config.dataDir, 'workspaces');
      expect(existsSync(path.join(workspacesDir, old?.id as string))).toBe(false);
      expect(existsSync(path.join(workspacesDir, recent?.id as string))).toBe(true);
    } finally {
      await service.close();
    }
  });
});

describe('workspace byte quota', () => {
  it('refuses writes and imports past the quota, while commands can still clean up', async () => {
    const service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(1024 * 1024) },
    });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const client = await connectSdkClient(service, fixture.key, 'erin');
      try {
        const filled = await callTool(client, 'sandbox_exec', { command: 'head -c 1000000 /dev/zero > big.bin' });
        expect(filled.value.exitCode).toBe(0);
        const refused = await callTool(client, 'sandbox_write_file', {
          path: 'note.txt',
          content: 'x'.repeat(100_000),
        });
        expect(refused.value.error.code).toBe('QUOTA_EXCEEDED');
        expect(
          (await callTool(client, 'sandbox_list_files', {})).value.entries.map((entry: { name: string }) => entry.name),
        ).toEqual(['big.bin']);
        expect((await callTool(client, 'sandbox_exec', { command: 'rm big.bin' })).value.exitCode).toBe(0);
        const accepted = await callTool(client, 'sandbox_write_file', {
          path: 'note.txt',
          content: 'x'.repeat(100_000),
        });
        expect(accepted.value).toEqual({ path: 'note.txt', size: 100_000 });
        const row = await service.database.db.selectFrom('workspaces').select('bytes').executeTakeFirstOrThrow();
        // What the workspace's filesystem counts: the file's blocks (and its directory's).
        expect(row.bytes).toBeGreaterThanOrEqual(100_000);
        expect(row.bytes).toBeLessThan(100_000 + 64 * 1024);
      } finally {
        await client.close();
      }
    } finally {
      await service.close();
    }
  });
});
