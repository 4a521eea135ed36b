import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient, rawMcp, toolCall } from './support/mcp.js';
import { awayFromWindowEdge } from './support/rate-window.js';
import { replicaAdmin, type ServiceReplica, startReplica } from './support/replica.js';
import {
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import { agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';
import { upload } from './support/upload.js';

/**
 * Two `mordn serve` processes behind an imaginary load balancer: one PostgreSQL schema, one S3
 * bucket, one workspaces directory. Whatever a user does through one replica must hold through
 * the other, and every shared limit must count once, not once per process.
 */

const CALLS_PER_MINUTE = 6;
const WORKSPACE_MAX_BYTES = 1024 * 1024;
const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let s3: TestS3Server;
let target: TestDatabaseTarget;
let database: Database;
let a: ServiceReplica;
let b: ServiceReplica;
let key: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A tenant with one agent and a read+write key, created through `first`, configured through `second`. */
async function createAgent(first: ServiceReplica, second: ServiceReplica, config?: unknown) {
  const tenant = await replicaAdmin(first, 'POST', '/v1/admin/tenants', { name: 'Replicated' });
  const agent = await replicaAdmin(second, 'POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  const issued = await replicaAdmin(first, 'POST', `/v1/admin/agents/${agent.id}/keys`, {
    permissions: ['read', 'write'],
  });
  if (config !== undefined) {
    await replicaAdmin(second, 'PUT', `/v1/admin/agents/${agent.id}/config`, config);
    await replicaAdmin(first, 'POST', `/v1/admin/agents/${agent.id}/config/publish`);
  }
  return { agentId: String(agent.id), key: String(issued.key) };
}

interface ToolOutcome {
  status: number;
  retryAfter: string | null;
  /** The problem code of a refused request. */
  code?: string;
  isError?: boolean;
  value?: Json;
}

/** One stateless `tools/call`, as a load balancer would route it to `replica`. */
async function call(
  replica: ServiceReplica,
  userId: string,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolOutcome> {
  const response = await rawMcp(replica, key, toolCall(name, args), { userId });
  const body = await readJson(response);
  const outcome: ToolOutcome = { status: response.status, retryAfter: response.headers.get('retry-after') };
  if (response.status !== 200) return { ...outcome, code: body.code };
  const text = body.result?.content?.find((part: { type: string }) => part.type === 'text')?.text;
  return { ...outcome, isError: body.result?.isError === true, value: text ? JSON.parse(text) : undefined };
}

async function status(replica: ServiceReplica, agentKey: string, userId: string): Promise<Json> {
  const response = await replica.fetch('/v1/sandbox/status', { headers: agentHeaders(agentKey, userId) });
  expect(response.status).toBe(200);
  return readJson(response);
}

async function workspaceRows(userIds?: string[]) {
  let query = database.db.selectFrom('workspaces').select(['id', 'user_id']);
  if (userIds) query = query.where('user_id', 'in', userIds);
  return query.execute();
}

/** Workspace directories on the shared disk (the backend's probe leaves dot-named scratch entries only). */
async function workspaceDirectories(): Promise<string[]> {
  const entries = await readdir(path.join(target.dataDir, 'workspaces')).catch(() => []);
  return entries.filter((name) => !name.startsWith('.')).sort();
}

beforeAll(async () => {
  [s3, target] = await Promise.all([startS3Server(), createTestDatabaseTarget()]);
  const environment = {
    ...target.environment,
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_SIGNING_SECRET: 'replicas-shared-signing-secret-0123456789',
    ...s3StorageEnvironment(s3),
    ...s3CredentialsEnvironment(s3),
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: String(CALLS_PER_MINUTE),
    MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '1',
    MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(WORKSPACE_MAX_BYTES),
  };
  // Both start at once on an empty schema: migrating concurrently is part of what is tested.
  [a, b] = await Promise.all([startReplica(environment), startReplica(environment)]);
  database = await target.open();
  ({ key } = await createAgent(a, b, ENABLED));
}, 60_000);

afterAll(async () => {
  const exits = await Promise.all([a?.stop(), b?.stop()]);
  await database?.close();
  await target?.destroy();
  await s3?.close();
  // A clean SIGTERM shutdown of each replica that started.
  for (const exit of exits.filter((entry) => entry !== undefined)) expect(exit).toEqual({ code: 0, signal: null });
});

describe('two replicas sharing PostgreSQL, S3 and the workspaces directory', () => {
  it('serve an upload from A, its re-signed link from B, its import through B and its bytes through A', async () => {
    const csv = 'region,total\nnorth,3\nsouth,5\n';
    const uploaded = await upload(a, key, { bytes: csv, filename: 'sales.csv', type: 'text/csv' }, 'uma');
    expect(uploaded.status).toBe(201);
    const file = await readJson(uploaded);
    expect(file).toMatchObject({ filename: 'sales.csv', mediaType: 'text/csv', size: csv.length });

    const resigned = await b.fetch('/v1/uploads/resign', {
      method: 'POST',
      headers: { ...agentHeaders(key, 'uma'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ storagePath: file.storagePath }),
    });
    expect(resigned.status).toBe(200);
    const { url } = await readJson(resigned);
    expect(url.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(csv))).toBe(true);

    const throughB = await connectSdkClient(b, key, 'uma');
    const throughA = await connectSdkClient(a, key, 'uma');
    try {
      const imported = await callTool(throughB, 'sandbox_import_file', { storagePath: file.storagePath });
      expect(imported).toEqual({
        isError: false,
        value: { path: 'uploads/sales.csv', size: csv.length, mediaType: 'text/csv', filename: 'sales.csv' },
      });
      const read = await callTool(throughA, 'sandbox_exec', { command: 'cat uploads/sales.csv' });
      expect(read.isError).toBe(false);
      expect(read.value).toMatchObject({ exitCode: 0, stdout: csv });
    } finally {
      await Promise.all([throughA.close(), throughB.close()]);
    }
    expect(await workspaceRows(['uma'])).toHaveLength(1);
  });

  it('count one per-user rate limit across replicas, not one per process', async () => {
    await awayFromWindowEdge(8_000);
    for (let index = 0; index < CALLS_PER_MINUTE; index += 1) {
      const replica = index % 2 === 0 ? a : b;
      const outcome = await call(replica, 'rita', 'sandbox_exec', { command: `echo ${index}` });
      expect(outcome, `call ${index + 1}`).toMatchObject({ status: 200, isError: false });
      expect(outcome.value.stdout).toBe(`${index}\n`);
    }
    // Each replica has admitted only half the limit itself; the shared count is what refuses.
    for (const replica of [a, b]) {
      const refused = await call(replica, 'rita', 'sandbox_exec', { command: 'echo too-many' });
      expect(refused.status).toBe(429);
      expect(refused.code).toBe('RATE_LIMITED');
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    }
    // Another user of the same agent has a count of their own.
    expect(await call(b, 'other-rita', 'sandbox_exec', { command: 'true' })).toMatchObject({ status: 200 });
  });

  it('measure the workspace quota on the shared disk: bytes written through A refuse a write through B', async () => {
    const note = { path: 'note.txt', content: 'x'.repeat(100_000) };
    expect(await call(b, 'quinn', 'sandbox_write_file', note)).toMatchObject({
      status: 200,
      isError: false,
      value: { path: 'note.txt', size: 100_000 },
    });
    const filled = await call(a, 'quinn', 'sandbox_exec', { command: 'head -c 900000 /dev/zero > big.bin' });
    expect(filled).toMatchObject({ status: 200, isError: false, value: { exitCode: 0 } });
    const refused = await call(b, 'quinn', 'sandbox_write_file', { ...note, path: 'second.txt' });
    expect(refused).toMatchObject({ status: 200, isError: true, value: { error: { code: 'QUOTA_EXCEEDED' } } });
  });

  it('hold the concurrent-call slot across replicas: a call on B waits out a long call on A', async () => {
    const long = call(a, 'cora', 'sandbox_exec', { command: 'sleep 2; echo slept' });
    // The slot is a database lease: once A holds it, no replica may take a second one.
    const deadline = Date.now() + 5_000;
    for (;;) {
      const leases = await database.db
        .selectFrom('workspace_leases')
        .innerJoin('workspaces', 'workspaces.id', 'workspace_leases.workspace_id')
        .select('workspace_leases.id')
        .where('workspaces.user_id', '=', 'cora')
        .execute();
      if (leases.length > 0) break;
      expect(Date.now(), 'A never took a slot').toBeLessThan(deadline);
      await sleep(20);
    }
    const busy = await call(b, 'cora', 'sandbox_list_files', {});
    expect(busy).toMatchObject({ status: 429, code: 'RATE_LIMITED', retryAfter: '1' });
    expect(await long).toMatchObject({ status: 200, isError: false, value: { exitCode: 0, stdout: 'slept\n' } });
    expect(await call(b, 'cora', 'sandbox_list_files', {})).toMatchObject({ status: 200, isError: false });
    expect(await database.db.selectFrom('workspace_leases').selectAll().execute()).toEqual([]);
  });

  it('provision a fresh user exactly once when first calls reach A and B at the same moment', async () => {
    const users: string[] = [];
    for (let round = 0; round < 3; round += 1) {
      const roundUsers = Array.from({ length: 4 }, (_, index) => `racer-${round}-${index}`);
      users.push(...roundUsers);
      const outcomes = await Promise.all(
        roundUsers.flatMap((userId) =>
          (['a', 'b'] as const).map(async (name) => {
            const outcome = await call(name === 'a' ? a : b, userId, 'sandbox_write_file', {
              path: `from-${name}.txt`,
              content: name,
            });
            return { userId, name, outcome };
          }),
        ),
      );
      // With one slot per workspace, the loser of a race is refused as busy; nothing fails.
      for (const { outcome } of outcomes) {
        if (outcome.status === 200) expect(outcome).toMatchObject({ isError: false });
        else expect(outcome).toMatchObject({ status: 429, code: 'RATE_LIMITED', retryAfter: '1' });
      }
      // Whichever replica wrote, A and B (one after the other) list the same single workspace.
      await Promise.all(
        roundUsers.map(async (userId) => {
          const written = outcomes.filter((entry) => entry.userId === userId && entry.outcome.status === 200);
          expect(written.length, userId).toBeGreaterThan(0);
          const expected = written.map((entry) => `from-${entry.name}.txt`).sort();
          for (const replica of [a, b]) {
            const listed = await call(replica, userId, 'sandbox_list_files', {});
            expect(listed.status, userId).toBe(200);
            expect(listed.value.entries.map((entry: { name: string }) => entry.name).sort(), userId).toEqual(expected);
          }
        }),
      );
    }

    const rows = await workspaceRows(users);
    expect(rows.map((row) => row.user_id).sort()).toEqual([...users].sort());
    const directories = await workspaceDirectories();
    for (const row of rows) expect(directories).toContain(row.id);
    // One directory per workspace record in the whole run: no replica made one of its own.
    expect(directories).toEqual((await workspaceRows()).map((row) => row.id).sort());
  });

  it('answer the same status on A and B, before and after provisioning and across a publish', async () => {
    for (const replica of [a, b]) {
      expect(await status(replica, key, 'stella')).toStrictEqual({ enabled: true, available: true });
    }
    expect(await workspaceRows(['stella'])).toEqual([]);
    expect(await call(a, 'stella', 'sandbox_exec', { command: 'true' })).toMatchObject({ status: 200 });
    expect(await workspaceRows(['stella'])).toHaveLength(1);
    for (const replica of [a, b]) {
      expect(await status(replica, key, 'stella')).toStrictEqual({ enabled: true, available: true });
    }

    // An agent with only a draft: closed on both; published through B, open on both at once.
    const drafted = await createAgent(a, b);
    await replicaAdmin(a, 'PUT', `/v1/admin/agents/${drafted.agentId}/config`, ENABLED);
    for (const replica of [a, b]) {
      expect(await status(replica, drafted.key, 'stella')).toStrictEqual({ enabled: false, available: false });
    }
    await replicaAdmin(b, 'POST', `/v1/admin/agents/${drafted.agentId}/config/publish`);
    for (const replica of [a, b]) {
      expect(await status(replica, drafted.key, 'stella')).toStrictEqual({ enabled: true, available: true });
    }
  });
});
