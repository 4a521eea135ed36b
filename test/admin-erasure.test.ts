import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import { createS3Client } from '../src/storage/s3-storage.js';
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
import { adminRequest, agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

/**
 * `POST /v1/admin/agents/:agentId/users/:userId/erase` over real HTTP, with real workspaces
 * (bwrap), real uploads and artifacts made through the API and the sandbox tools, and chats in
 * the service's store: dry runs change nothing, real runs remove exactly the chosen kinds of
 * exactly one user, a failing storage leaves a partial, retryable erasure.
 */

const SANDBOXED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

interface Seeded {
  upload: string;
  artifact: string;
}

/** One user's data made the way users make it: an upload, a workspace file published, two chats. */
async function seedUser(service: TestService, agent: AgentFixture, userId: string): Promise<Seeded> {
  const uploaded = await upload(service, agent.key, { bytes: PNG_1X1, filename: 'photo.png' }, userId);
  expect(uploaded.status).toBe(201);
  const client = await connectSdkClient(service, agent.key, userId);
  let published: Awaited<ReturnType<typeof callTool>>;
  try {
    expect((await callTool(client, 'sandbox_write_file', { path: 'report.csv', content: 'a,b\n1,2\n' })).isError).toBe(
      false,
    );
    published = await callTool(client, 'sandbox_publish_file', { path: 'report.csv' });
  } finally {
    await client.close();
  }
  expect(published.isError).toBe(false);
  const store = createDatabaseChatStore(service.database.db, agent);
  for (const chatId of ['chat-1', 'chat-2']) {
    await store.saveMessages({ userId }, chatId, [
      { id: `${chatId}-m1`, role: 'user', parts: [{ type: 'text', text: 'hi' }] },
    ]);
  }
  return { upload: (await readJson(uploaded)).storagePath, artifact: published.value.file.storagePath };
}

function erase(service: TestService, agentId: string, userId: string, body?: unknown, token = TEST_ADMIN_TOKEN) {
  const init = adminRequest('POST', body);
  return service.fetch(`/v1/admin/agents/${agentId}/users/${encodeURIComponent(userId)}/erase`, {
    ...init,
    headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` },
  });
}

/** Every row of the user's data, per table, for before/after comparisons. */
async function userRows(service: TestService, agentId: string, userId: string) {
  const { db } = service.database;
  const of = <T extends 'stored_files' | 'workspaces' | 'chats' | 'artifact_downloads'>(table: T) =>
    db
      .selectFrom(table as 'chats')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('user_id', '=', userId)
      .execute()
      .then((rows) => rows.map((row) => JSON.stringify(row)).sort());
  return {
    storedFiles: await of('stored_files'),
    workspaces: await of('workspaces'),
    chats: await of('chats'),
    downloads: await of('artifact_downloads'),
  };
}

async function workspaceId(service: TestService, agentId: string, userId: string): Promise<string | undefined> {
  const row = await service.database.db
    .selectFrom('workspaces')
    .select('id')
    .where('agent_id', '=', agentId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.id;
}

/** Workspace directories on disk (the backend's probe leaves dot-named scratch entries only). */
async function workspaceDirectories(service: TestService): Promise<string[]> {
  const entries = await readdir(path.join(service.config.dataDir, 'workspaces')).catch(() => []);
  return entries.filter((name) => !name.startsWith('.')).sort();
}

/** Objects in local storage (`files/`), relative to it. */
async function storedObjects(service: TestService): Promise<string[]> {
  const root = path.join(service.config.dataDir, 'files');
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && !entry.parentPath.includes('.incoming'))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** Every key in the bucket, read back through the S3 protocol. */
async function bucketKeys(s3: TestS3Server): Promise<string[]> {
  const client = createS3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: s3.credentials,
  });
  try {
    const listing = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    return (listing.Contents ?? []).map((object) => object.Key ?? '').sort();
  } finally {
    client.destroy();
  }
}

const ZERO = { workspaces: 0, egressDecisions: 0, uploads: 0, artifacts: 0, chats: 0 };

describe('erasing a user on local storage', () => {
  let service: TestService;
  let agent: AgentFixture;
  let otherAgent: AgentFixture;
  let alice: Seeded;
  let bob: Seeded;
  let aliceElsewhere: Seeded;

  beforeAll(async () => {
    service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    agent = await createAgentFixture(service.database.db, { published: SANDBOXED });
    otherAgent = await createAgentFixture(service.database.db, { published: SANDBOXED, tenantId: agent.tenantId });
    alice = await seedUser(service, agent, 'alice');
    bob = await seedUser(service, agent, 'bob');
    aliceElsewhere = await seedUser(service, otherAgent, 'alice');
    // One download of alice's artifact, so she has a download record.
    const signed = await service.fetch('/v1/uploads/resign', {
      method: 'POST',
      headers: { ...agentHeaders(agent.key, 'alice'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ storagePath: alice.artifact }),
    });
    expect((await fetch((await readJson(signed)).url)).status).toBe(200);
    const downloads = await pollUntil(
      async () => (await userRows(service, agent.agentId, 'alice')).downloads,
      (rows) => rows.length === 1,
      { timeoutMs: 5_000 },
    );
    expect(downloads).toHaveLength(1);
  }, 120_000);
  afterAll(() => service?.close());

  it('needs the admin token', async () => {
    const missing = await service.fetch(`/v1/admin/agents/${agent.agentId}/users/alice/erase`, { method: 'POST' });
    expect(missing.status).toBe(401);
    const wrong = await erase(service, agent.agentId, 'alice', {}, 'not-the-admin-token');
    expect(wrong.status).toBe(401);
    expect((await readJson(wrong)).code).toBe('INVALID_ADMIN_TOKEN');
  });

  it('refuses bad input with the field named, and an unknown agent with 404, changing nothing', async () => {
    const before = await userRows(service, agent.agentId, 'alice');
    const unknownKind = await erase(service, agent.agentId, 'alice', {
      dryRun: false,
      include: ['uploads', 'secrets'],
    });
    expect(unknownKind.status).toBe(400);
    const problem = await readJson(unknownKind);
    expect(problem.code).toBe('VALIDATION_FAILED');
    expect(problem.errors.map((error: { path: string }) => error.path)).toEqual(['include.1']);
    expect(problem.detail).toContain('include');

    const notBoolean = await readJson(await erase(service, agent.agentId, 'alice', { dryRun: 'no' }));
    expect([notBoolean.code, notBoolean.errors[0].path]).toEqual(['VALIDATION_FAILED', 'dryRun']);
    const unknownKey = await readJson(await erase(service, agent.agentId, 'alice', { dryRun: false, all: true }));
    expect(unknownKey.code).toBe('VALIDATION_FAILED');

    const comma = await erase(service, agent.agentId, 'alice,bob', { dryRun: false });
    expect(comma.status).toBe(400);
    const commaProblem = await readJson(comma);
    expect(commaProblem.code).toBe('INVALID_USER');
    expect(commaProblem.detail).toContain('userId');
    expect((await erase(service, agent.agentId, 'x'.repeat(257), { dryRun: false })).status).toBe(400);

    const unknownAgent = await erase(service, 'agt_000000000000000000000000', 'alice', { dryRun: false });
    expect(unknownAgent.status).toBe(404);
    expect((await readJson(unknownAgent)).code).toBe('NOT_FOUND');
    expect(await userRows(service, agent.agentId, 'alice')).toEqual(before);
  });

  it('dry-runs by default: counts what would go and changes nothing, in rows or on disk', async () => {
    const rows = await userRows(service, agent.agentId, 'alice');
    const directories = await workspaceDirectories(service);
    const objects = await storedObjects(service);
    expect(directories).toContain(await workspaceId(service, agent.agentId, 'alice'));
    expect(objects).toEqual(expect.arrayContaining([alice.upload, alice.artifact]));

    const bare = await erase(service, agent.agentId, 'alice');
    expect(bare.status).toBe(200);
    const one = { ...ZERO, workspaces: 1 };
    expect(await readJson(bare)).toEqual({
      dryRun: true,
      counts: one,
      remaining: one,
      status: 'partial',
      usageRows: 5,
    });

    const all = { workspaces: 1, egressDecisions: 0, uploads: 1, artifacts: 1, chats: 2 };
    const full = await readJson(
      await erase(service, agent.agentId, 'alice', { include: ['uploads', 'artifacts', 'chats'] }),
    );
    expect(full).toEqual({ dryRun: true, counts: all, remaining: all, status: 'partial', usageRows: 5 });

    expect(await userRows(service, agent.agentId, 'alice')).toEqual(rows);
    expect(await workspaceDirectories(service)).toEqual(directories);
    expect(await storedObjects(service)).toEqual(objects);
  });

  it('erases the workspace and the chosen kinds of exactly that user, keeps the rest, and repeats as a no-op', async () => {
    const aliceWorkspace = await workspaceId(service, agent.agentId, 'alice');
    const bobBefore = await userRows(service, agent.agentId, 'bob');
    const elsewhereBefore = await userRows(service, otherAgent.agentId, 'alice');
    const chatsBefore = (await userRows(service, agent.agentId, 'alice')).chats;

    const response = await erase(service, agent.agentId, 'alice', { dryRun: false, include: ['uploads', 'artifacts'] });
    expect(response.status).toBe(200);
    expect(await readJson(response)).toEqual({
      dryRun: false,
      counts: { workspaces: 1, egressDecisions: 0, uploads: 1, artifacts: 1, chats: 0 },
      remaining: ZERO,
      status: 'complete',
      usageRows: 5,
    });

    const after = await userRows(service, agent.agentId, 'alice');
    expect(after).toEqual({ storedFiles: [], workspaces: [], chats: chatsBefore, downloads: [] });
    expect(await workspaceDirectories(service)).not.toContain(aliceWorkspace);
    const objects = await storedObjects(service);
    expect(objects).not.toContain(alice.upload);
    expect(objects).not.toContain(alice.artifact);

    // Bob in the same agent, and alice in another agent of the same tenant, keep everything.
    expect(await userRows(service, agent.agentId, 'bob')).toEqual(bobBefore);
    expect(await userRows(service, otherAgent.agentId, 'alice')).toEqual(elsewhereBefore);
    expect(objects).toEqual(
      expect.arrayContaining([bob.upload, bob.artifact, aliceElsewhere.upload, aliceElsewhere.artifact]),
    );
    const directories = await workspaceDirectories(service);
    expect(directories).toContain(await workspaceId(service, agent.agentId, 'bob'));
    expect(directories).toContain(await workspaceId(service, otherAgent.agentId, 'alice'));

    const again = await readJson(
      await erase(service, agent.agentId, 'alice', { dryRun: false, include: ['uploads', 'artifacts'] }),
    );
    expect(again).toEqual({ dryRun: false, counts: ZERO, remaining: ZERO, status: 'complete', usageRows: 0 });

    const chats = await readJson(await erase(service, agent.agentId, 'alice', { dryRun: false, include: ['chats'] }));
    expect(chats).toEqual({
      dryRun: false,
      counts: { ...ZERO, chats: 2 },
      remaining: ZERO,
      status: 'complete',
      usageRows: 0,
    });
    expect((await userRows(service, agent.agentId, 'alice')).chats).toEqual([]);
    expect(await userRows(service, agent.agentId, 'bob')).toEqual(bobBefore);
  });

  it('keeps a workspace a tool call is using (partial), and removes it on the retry after the call', async () => {
    await seedUser(service, agent, 'erin');
    const id = (await workspaceId(service, agent.agentId, 'erin')) as string;
    await service.database.db
      .insertInto('workspace_leases')
      .values({ id: 'lease_running_call', workspace_id: id, expires_at: Date.now() + 60_000 })
      .execute();
    const busy = await readJson(await erase(service, agent.agentId, 'erin', { dryRun: false }));
    expect(busy).toEqual({
      dryRun: false,
      counts: ZERO,
      remaining: { ...ZERO, workspaces: 1 },
      status: 'partial',
      usageRows: 5,
    });
    expect(await workspaceDirectories(service)).toContain(id);

    await service.database.db.deleteFrom('workspace_leases').where('id', '=', 'lease_running_call').execute();
    const retried = await readJson(await erase(service, agent.agentId, 'erin', { dryRun: false }));
    // Removing the workspace bills its sandbox's last reading (if it used anything since), which
    // erasure then keeps under the keyed hash like the rest.
    expect(retried).toEqual({
      dryRun: false,
      counts: { ...ZERO, workspaces: 1 },
      remaining: ZERO,
      status: 'complete',
      usageRows: expect.any(Number),
    });
    const named = await service.database.db
      .selectFrom('usage_daily')
      .select('user_id')
      .where('user_id', '=', 'erin')
      .execute();
    expect(named).toEqual([]);
    expect(await workspaceDirectories(service)).not.toContain(id);
  });

  it('answers a user with no data with zero counts, complete', async () => {
    const everything = { dryRun: false, include: ['uploads', 'artifacts', 'chats'] };
    expect(await readJson(await erase(service, agent.agentId, 'nobody', everything))).toEqual({
      dryRun: false,
      counts: ZERO,
      remaining: ZERO,
      status: 'complete',
      usageRows: 0,
    });
  });
});

describe('erasing a workspace while sandboxes are off', () => {
  let service: TestService;
  afterAll(() => service?.close());

  it('keeps the record (its files may exist) and reports the erasure partial', async () => {
    service = await startTestService();
    const agent = await createAgentFixture(service.database.db);
    const now = Date.now();
    await service.database.db
      .insertInto('workspaces')
      .values({
        id: 'ws_00000000000000000000000a',
        tenant_id: agent.tenantId,
        agent_id: agent.agentId,
        user_id: 'carol',
        backend: 'bwrap',
        placement: null,
        created_at: now,
        last_used_at: now,
      })
      .execute();
    const report = await readJson(await erase(service, agent.agentId, 'carol', { dryRun: false }));
    expect(report).toEqual({
      dryRun: false,
      counts: ZERO,
      remaining: { ...ZERO, workspaces: 1 },
      status: 'partial',
      usageRows: 0,
    });
    expect(await workspaceId(service, agent.agentId, 'carol')).toBe('ws_00000000000000000000000a');
  });
});

describe('erasing while storage fails', () => {
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

  it('keeps the rows of files it could not delete, reports them remaining, and a retry after repair completes', async () => {
    const agent = await createAgentFixture(service.database.db, { published: SANDBOXED });
    const seeded = await seedUser(service, agent, 'dave');
    const include = ['uploads', 'artifacts', 'chats'];
    expect(await bucketKeys(s3)).toEqual([seeded.artifact, seeded.upload].sort());

    s3.inject(503);
    const failed = await erase(service, agent.agentId, 'dave', { dryRun: false, include });
    s3.inject(undefined);
    expect(failed.status).toBe(200);
    expect(await readJson(failed)).toEqual({
      dryRun: false,
      counts: { workspaces: 1, egressDecisions: 0, uploads: 0, artifacts: 0, chats: 2 },
      remaining: { workspaces: 0, egressDecisions: 0, uploads: 1, artifacts: 1, chats: 0 },
      status: 'partial',
      usageRows: 5,
    });
    const kept = await service.database.db
      .selectFrom('stored_files')
      .select('storage_path')
      .where('agent_id', '=', agent.agentId)
      .orderBy('storage_path')
      .execute();
    expect(kept.map((row) => row.storage_path)).toEqual([seeded.artifact, seeded.upload].sort());
    expect(await bucketKeys(s3)).toEqual([seeded.artifact, seeded.upload].sort());
    expect(await workspaceId(service, agent.agentId, 'dave')).toBeUndefined();

    const retried = await readJson(await erase(service, agent.agentId, 'dave', { dryRun: false, include }));
    expect(retried).toEqual({
      dryRun: false,
      counts: { workspaces: 0, egressDecisions: 0, uploads: 1, artifacts: 1, chats: 0 },
      remaining: ZERO,
      status: 'complete',
      usageRows: 0,
    });
    expect(await bucketKeys(s3)).toEqual([]);
  });
});
