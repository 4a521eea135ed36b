import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import { ensureWorkspaceRecord } from '../src/sandbox/workspaces.js';
import { workspaceRowsWithoutMeter } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import type { Json } from './support/json.js';
import { type EraClient, LEGACY_ERA, MCP_ERAS, MODERN_ERA } from './support/mcp-eras.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

const runFile = promisify(execFile);
const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const DAY_MS = 24 * 60 * 60 * 1000;
const MIB = 1024 * 1024;
const QUOTA_BYTES = 64 * MIB;
const MAX_FILES = 4096;
const RETENTION_DAYS = 7;
/** A filesystem counts whole blocks and some metadata; a walk counts file sizes exactly. */
const BLOCK_SLACK = 64 * 1024;
/** As `startTestService` decides: per-workspace filesystems as root, weak limits otherwise. */
const WEAK_LIMITS = process.getuid?.() !== 0;

/**
 * The file limit a workspace reports: none under weak limits; with its own filesystem, at most
 * the configured count (inodes come in whole inode blocks, and ext4 keeps a few for itself).
 */
function expectFileQuota(value: unknown, configured: number): void {
  if (WEAK_LIMITS) {
    expect(value).toBeNull();
    return;
  }
  expect(Number.isSafeInteger(value)).toBe(true);
  expect(value as number).toBeLessThanOrEqual(configured);
  expect(value as number).toBeGreaterThan(configured - 32);
}

/** a (5 bytes), d/, d/e/, d/b (3 bytes) with a hard link d/hard, and a symlink: five inodes. */
const TREE = 'mkdir -p d/e && printf hello > a && printf abc > d/b && ln d/b d/hard && ln -s a link';
const TREE_FILES = 5;
const TREE_BYTES = 8;

/**
 * Builds `tree` (a shell command) in a fresh host directory and measures it with the file helper
 * as weak limits do (a walk, where no workspace filesystem counts inodes), inside bubblewrap with
 * the directory at /workspace.
 */
async function walkWithFileHelper(tree: string): Promise<Json> {
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-usage-walk-'));
  try {
    await runFile('sh', ['-c', tree], { cwd: directory });
    const helper = path.join(packageRoot(), 'src/sandbox/runtime/fileops.py');
    const { stdout } = await runFile('bwrap', [
      ...['--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64'],
      ...['--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev', '--unshare-all'],
      ...['--bind', directory, '/workspace', '--ro-bind', helper, '/fileops.py'],
      ...['/usr/bin/python3', '/fileops.py', 'usage', '1000'],
    ]);
    return JSON.parse(stdout);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function sandboxService(environment: Record<string, string>): Promise<TestService> {
  return startTestService({
    environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000', ...environment },
  });
}

/** The workspace row of a user, read straight from the database. */
async function workspaceRow(service: TestService, fixture: AgentFixture, userId: string) {
  return service.database.db
    .selectFrom('workspaces')
    .selectAll()
    .where('agent_id', '=', fixture.agentId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

async function workspaceRows(service: TestService): Promise<unknown[]> {
  return workspaceRowsWithoutMeter(service.database);
}

async function usageOf(service: TestService, key: string, userId: string): Promise<{ status: number; body: Json }> {
  const response = await service.fetch('/v1/sandbox/usage', { headers: agentHeaders(key, userId) });
  return { status: response.status, body: await response.json() };
}

/** Calls a tool and fails the test unless it succeeded. */
async function call(client: EraClient, name: string, args: Record<string, unknown>): Promise<Json> {
  const result = await client.callTool(name, args);
  expect(result.isError, JSON.stringify(result.value)).toBe(false);
  return result.value;
}

describe('workspace usage, with retention and a quota', () => {
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    service = await sandboxService({
      MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(QUOTA_BYTES),
      MORDN_SANDBOX_WORKSPACE_MAX_FILES: String(MAX_FILES),
      MORDN_SANDBOX_RETENTION_DAYS: String(RETENTION_DAYS),
    });
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });
  afterAll(async () => {
    await service.close();
  });

  describe.each(MCP_ERAS)('sandbox_list_files: $name', (era) => {
    const userId = `lister-${era.kind}`;
    let client: EraClient;
    beforeAll(async () => {
      client = await era.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, userId));
    });
    afterAll(async () => {
      await client.close();
    });

    it('reports bytes and files that follow writes and deletions, against the configured quota', async () => {
      await call(client, 'sandbox_write_file', { path: 'a.txt', content: 'a'.repeat(1000) });
      const first = await call(client, 'sandbox_list_files', {});
      expect(first.entries).toEqual([{ name: 'a.txt', type: 'file', size: 1000 }]);
      expect(first.truncated).toBe(false);
      expect(first.usage).toMatchObject({ quotaBytes: QUOTA_BYTES, fileCount: 1 });
      expectFileQuota(first.usage.fileQuota, MAX_FILES);
      expect(first.usage.bytesUsed).toBeGreaterThanOrEqual(1000);
      expect(service.config.sandbox.workspaceMaxBytes).toBe(QUOTA_BYTES);

      await call(client, 'sandbox_write_file', { path: 'docs/b.txt', content: 'b'.repeat(200_000) });
      const second = await call(client, 'sandbox_list_files', { path: 'docs' });
      expect(second.entries).toEqual([{ name: 'b.txt', type: 'file', size: 200_000 }]);
      // a.txt, docs and docs/b.txt: the whole workspace, whichever directory was listed.
      expect(second.usage.fileCount).toBe(3);
      const grown = second.usage.bytesUsed - first.usage.bytesUsed;
      expect(grown).toBeGreaterThanOrEqual(200_000);
      expect(grown).toBeLessThan(200_000 + BLOCK_SLACK);

      // Files made by a command count as well, and so does their removal.
      await call(client, 'sandbox_exec', { command: 'mkdir -p out && for i in 1 2 3 4 5; do echo $i > out/$i; done' });
      expect((await call(client, 'sandbox_list_files', {})).usage.fileCount).toBe(9);
      await call(client, 'sandbox_exec', { command: 'rm -r out docs' });
      const shrunk = await call(client, 'sandbox_list_files', {});
      expect(shrunk.usage.fileCount).toBe(1);
      expect(first.usage.bytesUsed - shrunk.usage.bytesUsed).toBeLessThan(BLOCK_SLACK);
      expect(second.usage.bytesUsed - shrunk.usage.bytesUsed).toBeGreaterThanOrEqual(200_000);
    });

    it('says when retention deletes the workspace, counting from this call', async () => {
      const before = Date.now();
      const listed = await call(client, 'sandbox_list_files', {});
      const row = await workspaceRow(service, fixture, userId);
      expect(row).toBeDefined();
      const deleteAfter = Date.parse(listed.usage.deleteAfter);
      expect(listed.usage.deleteAfter).toBe(new Date(deleteAfter).toISOString());
      expect(deleteAfter).toBeGreaterThanOrEqual(before + RETENTION_DAYS * DAY_MS);
      // The call's use is recorded as it ends, a moment after the figure was taken.
      expect(deleteAfter).toBeLessThanOrEqual(Number(row?.last_used_at) + RETENTION_DAYS * DAY_MS);
    });

    it('gives the user the same figures through GET /v1/sandbox/usage, without recording a use', async () => {
      const listed = await call(client, 'sandbox_list_files', {});
      const row = await workspaceRow(service, fixture, userId);
      const lastUsedAt = Number(row?.last_used_at);
      const { status, body } = await usageOf(service, fixture.readKey, userId);
      expect(status).toBe(200);
      expect(body).toEqual({
        workspace: {
          lastUsedAt: new Date(lastUsedAt).toISOString(),
          bytesUsed: listed.usage.bytesUsed,
          quotaBytes: QUOTA_BYTES,
          fileCount: listed.usage.fileCount,
          fileQuota: listed.usage.fileQuota,
          deleteAfter: new Date(lastUsedAt + RETENTION_DAYS * DAY_MS).toISOString(),
        },
      });
      // Asking is not a use: retention still counts from the last tool call.
      expect(await workspaceRow(service, fixture, userId)).toEqual(row);
    });
  });

  it.skipIf(WEAK_LIMITS)('reports the file limit the workspace filesystem actually enforces', async () => {
    const client = await LEGACY_ERA.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, 'filler'));
    try {
      const { fileQuota } = (await call(client, 'sandbox_list_files', {})).usage;
      const fill = await call(client, 'sandbox_exec', {
        command: [
          'python3 -c "',
          'import os',
          'n = 0',
          'try:',
          '    while True:',
          "        open(f'f{n}', 'w').close()",
          '        n += 1',
          'except OSError as error:',
          '    print(n, error.errno)',
          '"',
        ].join('\n'),
      });
      // Exactly fileQuota files fit in the empty workspace; the next one is ENOSPC (28).
      expect(fill.stdout.trim()).toBe(`${fileQuota} 28`);
      expect((await call(client, 'sandbox_list_files', {})).usage.fileCount).toBe(fileQuota);
    } finally {
      await client.close();
    }
  });

  it('counts files, directories and links once each, on the filesystem and in the weak-limits walk alike', async () => {
    const client = await LEGACY_ERA.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, 'twin'));
    try {
      await call(client, 'sandbox_exec', { command: TREE });
      expect((await call(client, 'sandbox_list_files', {})).usage.fileCount).toBe(TREE_FILES);
    } finally {
      await client.close();
    }
    const walked = await walkWithFileHelper(TREE);
    expect(walked).toEqual({ ok: true, bytes: TREE_BYTES, files: TREE_FILES });
  });

  it('answers { workspace: null } for a user without a workspace and provisions none', async () => {
    const before = await workspaceRows(service);
    const response = await service.fetch('/v1/sandbox/usage', { headers: agentHeaders(fixture.key, 'newcomer') });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    expect(await response.json()).toEqual({ workspace: null });
    expect(await workspaceRow(service, fixture, 'newcomer')).toBeUndefined();
    expect(await workspaceRows(service)).toEqual(before);
  });

  it("never answers with another agent's or user's workspace", async () => {
    const owner = `owner-${Date.now()}`;
    const client = await LEGACY_ERA.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, owner));
    try {
      await call(client, 'sandbox_write_file', { path: 'mine.txt', content: 'mine' });
    } finally {
      await client.close();
    }
    expect((await usageOf(service, fixture.key, owner)).body.workspace.fileCount).toBe(1);
    const other = await createAgentFixture(service.database.db, { published: ENABLED, tenantId: fixture.tenantId });
    expect((await usageOf(service, other.key, owner)).body).toEqual({ workspace: null });
    expect((await usageOf(service, fixture.key, `${owner}-2`)).body).toEqual({ workspace: null });
  });
});

describe('workspace usage without retention, in a tight result budget', () => {
  let service: TestService;
  let fixture: AgentFixture;
  let client: EraClient;

  beforeAll(async () => {
    service = await sandboxService({ MORDN_SANDBOX_RETENTION_DAYS: '0', MORDN_SANDBOX_MAX_OUTPUT_BYTES: '2048' });
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
    client = await MODERN_ERA.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, 'keeper'));
  });
  afterAll(async () => {
    await client?.close();
    await service.close();
  });

  it('keeps the usage whole when the listing is cut, and deleteAfter is null', async () => {
    const longName = 'n'.repeat(120);
    await call(client, 'sandbox_exec', { command: `for i in $(seq 1 200); do : > ${longName}-$i; done` });
    const listed = await call(client, 'sandbox_list_files', {});
    expect(listed.truncated).toBe(true);
    expect(listed.entries.length).toBeGreaterThan(0);
    expect(listed.entries.length).toBeLessThan(200);
    expect(listed.usage).toEqual({
      bytesUsed: expect.any(Number),
      quotaBytes: service.config.sandbox.workspaceMaxBytes,
      fileCount: 200,
      fileQuota: listed.usage.fileQuota,
      deleteAfter: null,
    });
    expectFileQuota(listed.usage.fileQuota, service.config.sandbox.workspaceMaxFiles);
    const { body } = await usageOf(service, fixture.key, 'keeper');
    expect(body.workspace).toMatchObject({ fileCount: 200, deleteAfter: null, bytesUsed: listed.usage.bytesUsed });
  });
});

describe('workspace usage with sandboxes off on the service', () => {
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    service = await startTestService();
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });
  afterAll(async () => {
    await service.close();
  });

  it('still answers null for no workspace, and 503 for one it cannot measure', async () => {
    expect(await usageOf(service, fixture.key, 'idle')).toEqual({ status: 200, body: { workspace: null } });
    await ensureWorkspaceRecord(
      service.database.db,
      { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: 'idle' },
      'bwrap',
    );
    const { status, body } = await usageOf(service, fixture.key, 'idle');
    expect(status).toBe(503);
    expect(body.code).toBe('MANAGED_SANDBOX_UNAVAILABLE');
  });
});
