import { execFile } from 'node:child_process';
import { access, realpath } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { type MordnProcess, spawnMordn } from './support/process.js';
import { startTestService } from './support/service.js';

const runFile = promisify(execFile);
const ADMIN_TOKEN = 'shutdown-workspaces-admin-token';
/** Quota filesystems (loop mounts) and per-workspace cgroups need root. */
const isRoot = process.getuid?.() === 0;

let target: TestDatabaseTarget;
let service: MordnProcess | undefined;

beforeEach(async () => {
  target = await createTestDatabaseTarget();
});
afterEach(async () => {
  if (service && service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
  await service?.exited;
  service = undefined;
  // Unmounts whatever a failed run left, then removes the directory.
  await target.destroy();
});

/** The mount points `findmnt` lists at or below `directory`. */
async function mountsUnder(directory: string): Promise<string[]> {
  const { stdout } = await runFile('findmnt', ['-rn', '-o', 'TARGET']);
  return stdout
    .split('\n')
    .map((line) =>
      line.replace(/\\x([0-9a-f]{2})/gi, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    )
    .filter((mountPoint) => mountPoint === directory || mountPoint.startsWith(`${directory}/`));
}

/** `mordn serve` with bubblewrap sandboxes over quota filesystems (one sandbox kept warm too). */
async function serveWithSandboxes(): Promise<{ url: string; process: MordnProcess }> {
  const running = spawnMordn(['serve'], {
    ...target.environment,
    PORT: '0',
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_BACKEND: 'bwrap',
    MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(16 * 1024 * 1024),
    MORDN_SANDBOX_WARM_SANDBOXES: '1',
  });
  service = running;
  const listening = await running.waitForLog((line) => line.msg === 'mordn listening', 60_000);
  return { url: String(listening.url), process: running };
}

/** A tenant, an agent with sandboxes published, and a read+write key, through the admin API. */
async function agentKey(url: string): Promise<string> {
  const admin = async (route: string, body?: unknown, method = 'POST'): Promise<Json> => {
    const response = await fetch(`${url}${route}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(response.ok, `${method} ${route} answered ${response.status}`).toBe(true);
    return readJson(response);
  };
  const tenant = await admin('/v1/admin/tenants', { name: 'Shutdown tenant' });
  const agent = await admin(`/v1/admin/tenants/${tenant.id}/agents`, { name: 'Shutdown agent' });
  await admin(
    `/v1/admin/agents/${agent.id}/config`,
    { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
    'PUT',
  );
  await admin(`/v1/admin/agents/${agent.id}/config/publish`);
  return (await admin(`/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] })).key;
}

/** Writes a file in `userId`'s workspace with a real command: the workspace exists and is mounted. */
async function useWorkspace(url: string, key: string, userId: string): Promise<void> {
  const client = await connectSdkClient({ url }, key, userId);
  try {
    const written = await callTool(client, 'sandbox_exec', { command: 'echo kept > notes.txt && cat notes.txt' });
    expect(written.isError).toBe(false);
    expect(JSON.stringify(written.value)).toContain('kept');
  } finally {
    await client.close();
  }
}

/** The workspace filesystems mounted under the data directory (`…/workspaces/ws_…`). */
function workspaceMounts(mounts: string[]): string[] {
  return mounts.filter((mountPoint) => /\/workspaces\/ws_[A-Za-z0-9_-]+$/.test(mountPoint));
}

/** Whether `rm -rf` removes `directory` completely (it fails on a busy mount point). */
async function removeWithRm(directory: string): Promise<string> {
  const removed = await runFile('rm', ['-rf', directory]).then(
    () => 'removed',
    (error: Error & { stderr?: string }) => `rm failed: ${error.stderr ?? error.message}`,
  );
  if (removed !== 'removed') return removed;
  return access(directory).then(
    () => 'rm left it there',
    () => 'removed',
  );
}

describe.skipIf(!isRoot)('graceful shutdown with workspace filesystems', { timeout: 180_000 }, () => {
  it('on SIGTERM unmounts what it mounted: nothing stays mounted and rm -rf of the data directory succeeds', async () => {
    const dataDir = await realpath(target.dataDir);
    const { url, process: running } = await serveWithSandboxes();
    await useWorkspace(url, await agentKey(url), 'shutdown-user');
    // While serving, the workspace is its own filesystem mounted in the data directory.
    expect(workspaceMounts(await mountsUnder(dataDir))).toHaveLength(1);

    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(running.stdout.some((line) => line.includes('"shutdown complete"'))).toBe(true);
    expect(running.stdout.filter((line) => line.includes('stayed mounted at shutdown'))).toEqual([]);

    expect(await mountsUnder(dataDir)).toEqual([]);
    expect(await removeWithRm(dataDir)).toBe('removed');
  });

  it('unmounts them when the sandbox backend is closed in process too', async () => {
    const sandboxes = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(16 * 1024 * 1024) },
    });
    const dataDir = await realpath(sandboxes.config.dataDir);
    try {
      const fixture = await createAgentFixture(sandboxes.database.db, {
        published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
      });
      await useWorkspace(sandboxes.url, fixture.key, 'closing-user');
      expect(workspaceMounts(await mountsUnder(dataDir))).toHaveLength(1);
      // What the service's own shutdown (and `composeDependencies(…).close()`) calls.
      await sandboxes.deps.sandbox?.backend.close?.();
      expect(await mountsUnder(dataDir)).toEqual([]);
    } finally {
      // Its test database's clean-up would unmount what was left: the check above comes first.
      await sandboxes.close();
    }
  });
});
