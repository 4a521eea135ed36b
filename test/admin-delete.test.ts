import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import type { DatabaseSchema } from '../src/db/schema.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { pollUntil } from './support/poll.js';
import {
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import { adminRequest, agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

/**
 * `DELETE /v1/admin/agents/:agentId` and `DELETE /v1/admin/tenants/:tenantId` over real HTTP:
 * refused while keys are active, and with `?force=true` nothing of the agent is left in any
 * table, on disk or in storage, its keys stop authenticating, and neighbours keep everything.
 * When storage fails the agent stays, and a retry finishes.
 */

const SANDBOXED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

/** Every table that holds rows of an agent, with how to find them. */
const AGENT_TABLES = [
  'agents',
  'agent_configs',
  'api_keys',
  'stored_files',
  'artifact_downloads',
  'workspaces',
  'workspace_leases',
  'chats',
  'sandbox_tokens',
  'rate_limit_windows',
] as const satisfies ReadonlyArray<keyof DatabaseSchema>;

/** How many rows each table holds for the agent. */
async function agentRowCounts(service: TestService, agent: AgentFixture): Promise<Record<string, number>> {
  const { db } = service.database;
  const where = (table: (typeof AGENT_TABLES)[number]) => {
    if (table === 'agents') return sql`id = ${agent.agentId}`;
    if (table === 'workspace_leases') {
      return sql`workspace_id in (select id from workspaces where agent_id = ${agent.agentId})`;
    }
    // Rate-limit windows name their owner inside the key.
    if (table === 'rate_limit_windows') return sql`key like ${`%"${agent.agentId}"%`}`;
    return sql`agent_id = ${agent.agentId}`;
  };
  const counts: Record<string, number> = {};
  for (const table of AGENT_TABLES) {
    const { rows } = await sql<{
      count: number | string;
    }>`select count(*) as count from ${sql.table(table)} where ${where(table)}`.execute(db);
    counts[table] = Number(rows[0]?.count);
  }
  return counts;
}

/** A user's data made through the API: an upload, a published workspace file (downloaded once), a chat, a token. */
async function seedUser(service: TestService, agent: AgentFixture, userId: string): Promise<string[]> {
  const uploaded = await upload(service, agent.key, { bytes: PNG_1X1, filename: 'photo.png' }, userId);
  expect(uploaded.status).toBe(201);
  const client = await connectSdkClient(service, agent.key, userId);
  let published: Awaited<ReturnType<typeof callTool>>;
  try {
    await callTool(client, 'sandbox_write_file', { path: 'out.txt', content: 'result\n' });
    published = await callTool(client, 'sandbox_publish_file', { path: 'out.txt' });
  } finally {
    await client.close();
  }
  expect(published.isError).toBe(false);
  expect((await fetch(published.value.file.url)).status).toBe(200);
  await createDatabaseChatStore(service.database.db, agent).saveMessages({ userId }, 'chat-1', [
    { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] },
  ]);
  const token = await service.fetch('/v1/sandbox/tokens', { method: 'POST', headers: agentHeaders(agent.key, userId) });
  expect(token.status).toBe(201);
  return [(await readJson(uploaded)).storagePath, published.value.file.storagePath];
}

async function workspaceDirectories(service: TestService): Promise<string[]> {
  const entries = await readdir(path.join(service.config.dataDir, 'workspaces')).catch(() => []);
  return entries.filter((name) => !name.startsWith('.')).sort();
}

async function storedObjects(service: TestService): Promise<string[]> {
  const root = path.join(service.config.dataDir, 'files');
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && !entry.parentPath.includes('.incoming'))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
}

async function agentWorkspaces(service: TestService, agent: AgentFixture): Promise<string[]> {
  const rows = await service.database.db
    .selectFrom('workspaces')
    .select('id')
    .where('agent_id', '=', agent.agentId)
    .execute();
  return rows.map((row) => row.id);
}

const status = (service: TestService, key: string) =>
  service.fetch('/v1/sandbox/status', { headers: agentHeaders(key, 'alice') });

describe('deleting agents and tenants', () => {
  let service: TestService;
  let doomed: AgentFixture;
  let sibling: AgentFixture;
  let neighbour: AgentFixture;
  let doomedObjects: string[];
  let neighbourObjects: string[];

  beforeAll(async () => {
    service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    const { db } = service.database;
    doomed = await createAgentFixture(db, { published: SANDBOXED });
    sibling = await createAgentFixture(db, { published: SANDBOXED, tenantId: doomed.tenantId });
    neighbour = await createAgentFixture(db, { published: SANDBOXED });
    doomedObjects = [...(await seedUser(service, doomed, 'alice')), ...(await seedUser(service, doomed, 'bob'))];
    await seedUser(service, sibling, 'alice');
    neighbourObjects = await seedUser(service, neighbour, 'alice');
    // Download records are written once the response has settled.
    await pollUntil(
      () => agentRowCounts(service, doomed),
      (counts) => counts.artifact_downloads === 2,
      { timeoutMs: 5_000 },
    );
  }, 180_000);
  afterAll(() => service?.close());

  it('needs the admin token, and answers 404 for unknown ids and 400 for a bad force flag', async () => {
    const noToken = await service.fetch(`/v1/admin/agents/${doomed.agentId}?force=true`, { method: 'DELETE' });
    expect(noToken.status).toBe(401);
    const tenantNoToken = await service.fetch(`/v1/admin/tenants/${doomed.tenantId}?force=true`, { method: 'DELETE' });
    expect(tenantNoToken.status).toBe(401);

    const unknownAgent = await service.fetch(
      '/v1/admin/agents/agt_000000000000000000000000?force=true',
      adminRequest('DELETE'),
    );
    expect([unknownAgent.status, (await readJson(unknownAgent)).code]).toEqual([404, 'NOT_FOUND']);
    const unknownTenant = await service.fetch('/v1/admin/tenants/ten_000000000000000000000000', adminRequest('DELETE'));
    expect([unknownTenant.status, (await readJson(unknownTenant)).code]).toEqual([404, 'NOT_FOUND']);

    const badFlag = await service.fetch(`/v1/admin/agents/${doomed.agentId}?force=yes`, adminRequest('DELETE'));
    expect(badFlag.status).toBe(400);
    const problem = await readJson(badFlag);
    expect(problem.code).toBe('VALIDATION_FAILED');
    expect(problem.errors[0].path).toBe('force');
  });

  it('refuses while keys are active, naming how many and ?force=true, and changes nothing', async () => {
    const before = await agentRowCounts(service, doomed);
    const refused = await service.fetch(`/v1/admin/agents/${doomed.agentId}`, adminRequest('DELETE'));
    expect(refused.status).toBe(409);
    const problem = await readJson(refused);
    expect(problem.code).toBe('ACTIVE_KEYS');
    expect(problem.detail).toContain('2 active API keys');
    expect(problem.detail).toContain('?force=true');
    const tenantRefused = await readJson(
      await service.fetch(`/v1/admin/tenants/${doomed.tenantId}`, adminRequest('DELETE')),
    );
    expect(tenantRefused.code).toBe('ACTIVE_KEYS');
    expect(tenantRefused.detail).toContain('4 active API keys');

    expect(await agentRowCounts(service, doomed)).toEqual(before);
    expect((await status(service, doomed.key)).status).toBe(200);
  });

  it('with ?force=true deletes the agent and everything of it, and nothing of anyone else', async () => {
    const before = await agentRowCounts(service, doomed);
    for (const table of AGENT_TABLES.filter((name) => name !== 'workspace_leases'))
      expect(before[table]).toBeGreaterThan(0);
    const doomedWorkspaces = await agentWorkspaces(service, doomed);
    expect(doomedWorkspaces).toHaveLength(2);
    const neighbourBefore = await agentRowCounts(service, neighbour);
    const siblingBefore = await agentRowCounts(service, sibling);
    const neighbourWorkspaces = await agentWorkspaces(service, neighbour);

    const deleted = await service.fetch(`/v1/admin/agents/${doomed.agentId}?force=true`, adminRequest('DELETE'));
    expect(deleted.status).toBe(204);

    expect(Object.values(await agentRowCounts(service, doomed))).toEqual(AGENT_TABLES.map(() => 0));
    const directories = await workspaceDirectories(service);
    for (const id of doomedWorkspaces) expect(directories).not.toContain(id);
    const objects = await storedObjects(service);
    for (const object of doomedObjects) expect(objects).not.toContain(object);

    // Its keys stop authenticating; the tenant and the other agents are untouched.
    const refused = await status(service, doomed.key);
    expect([refused.status, (await readJson(refused)).code]).toEqual([401, 'INVALID_API_KEY']);
    expect((await status(service, neighbour.key)).status).toBe(200);
    expect(await agentRowCounts(service, neighbour)).toEqual(neighbourBefore);
    expect(await agentRowCounts(service, sibling)).toEqual(siblingBefore);
    expect(objects).toEqual(expect.arrayContaining(neighbourObjects));
    expect(directories).toEqual(expect.arrayContaining(neighbourWorkspaces));
    const tenant = await service.database.db
      .selectFrom('tenants')
      .select('id')
      .where('id', '=', doomed.tenantId)
      .execute();
    expect(tenant).toHaveLength(1);

    const again = await service.fetch(`/v1/admin/agents/${doomed.agentId}?force=true`, adminRequest('DELETE'));
    expect(again.status).toBe(404);
  });

  it('deletes a tenant with its remaining agents under ?force=true, leaving other tenants alone', async () => {
    const siblingWorkspaces = await agentWorkspaces(service, sibling);
    const neighbourBefore = await agentRowCounts(service, neighbour);

    const deleted = await service.fetch(`/v1/admin/tenants/${doomed.tenantId}?force=true`, adminRequest('DELETE'));
    expect(deleted.status).toBe(204);

    expect(Object.values(await agentRowCounts(service, sibling))).toEqual(AGENT_TABLES.map(() => 0));
    const { db } = service.database;
    expect(await db.selectFrom('tenants').select('id').where('id', '=', doomed.tenantId).execute()).toEqual([]);
    expect(await db.selectFrom('agents').select('id').where('tenant_id', '=', doomed.tenantId).execute()).toEqual([]);
    const directories = await workspaceDirectories(service);
    for (const id of siblingWorkspaces) expect(directories).not.toContain(id);
    expect((await status(service, sibling.key)).status).toBe(401);
    expect(await agentRowCounts(service, neighbour)).toEqual(neighbourBefore);
    expect((await service.fetch(`/v1/admin/tenants/${doomed.tenantId}`, adminRequest('DELETE'))).status).toBe(404);
  });
});

describe('deleting an agent while storage fails', () => {
  let s3: TestS3Server;
  let service: TestService;

  beforeAll(async () => {
    s3 = await startS3Server();
    for (const [name, value] of Object.entries(s3CredentialsEnvironment(s3))) vi.stubEnv(name, value);
    service = await startTestService({
      environment: { ...s3StorageEnvironment(s3), S3_TIMEOUT_MS: '400', MORDN_SANDBOX_ENABLED: 'true' },
    });
  });
  afterAll(async () => {
    s3?.inject(undefined);
    await service?.close();
    await s3?.close();
    vi.unstubAllEnvs();
  });

  it('keeps the agent and the rows of what is left (503), and a retry after repair finishes', async () => {
    const agent = await createAgentFixture(service.database.db, { published: SANDBOXED });
    const objects = await seedUser(service, agent, 'erin');

    s3.inject(503);
    const failed = await service.fetch(`/v1/admin/agents/${agent.agentId}?force=true`, adminRequest('DELETE'));
    s3.inject(undefined);
    expect(failed.status).toBe(503);
    const problem = await readJson(failed);
    expect(problem.code).toBe('STORAGE_UNAVAILABLE');
    expect(problem.detail).toContain('2 stored files');

    const left = await agentRowCounts(service, agent);
    expect(left).toMatchObject({ agents: 1, agent_configs: 1, stored_files: 2, workspaces: 0, chats: 0 });
    const paths = await service.database.db
      .selectFrom('stored_files')
      .select('storage_path')
      .where('agent_id', '=', agent.agentId)
      .execute();
    expect(paths.map((row) => row.storage_path).sort()).toEqual([...objects].sort());
    // The forced attempt revoked the keys already.
    expect((await status(service, agent.key)).status).toBe(401);

    const retried = await service.fetch(`/v1/admin/agents/${agent.agentId}`, adminRequest('DELETE'));
    expect(retried.status).toBe(204);
    expect(Object.values(await agentRowCounts(service, agent))).toEqual(AGENT_TABLES.map(() => 0));
  });
});

describe('deleting an agent while sandboxes are off', () => {
  let service: TestService;
  afterAll(() => service?.close());

  it('keeps the agent and its workspace record (503), since the files cannot be removed', async () => {
    service = await startTestService();
    const agent = await createAgentFixture(service.database.db);
    const now = Date.now();
    await service.database.db
      .insertInto('workspaces')
      .values({
        id: 'ws_00000000000000000000000b',
        tenant_id: agent.tenantId,
        agent_id: agent.agentId,
        user_id: 'frank',
        backend: 'bwrap',
        placement: null,
        created_at: now,
        last_used_at: now,
      })
      .execute();
    const refused = await service.fetch(`/v1/admin/agents/${agent.agentId}?force=true`, adminRequest('DELETE'));
    expect(refused.status).toBe(503);
    const problem = await readJson(refused);
    expect(problem.code).toBe('MANAGED_SANDBOX_UNAVAILABLE');
    expect(problem.detail).toContain('1 workspace could not be removed');
    expect(await agentRowCounts(service, agent)).toMatchObject({ agents: 1, workspaces: 1, agent_configs: 0 });
  });
});
