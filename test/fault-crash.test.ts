import { randomUUID } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { temporaryFilePath } from '../src/temporary-files.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type Json, readJson } from './support/json.js';
import { rawMcp, toolCall } from './support/mcp.js';
import { pollUntil } from './support/poll.js';
import { type ServiceReplica, startReplica } from './support/replica.js';
import { adminRequest, agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';
import { storedObjectMismatches, temporaryLeftovers } from './support/stored-objects.js';
import { pdfOfSize, upload } from './support/upload.js';

/**
 * `kill -9` of a real `mordn serve` in the middle of a transfer, then a restart on the same data
 * directory: nothing half-written may be registered or left behind, and what was there before
 * (stored files, workspace files) must have survived.
 */

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const CSV = 'region,total\nnorth,3\nsouth,5\n';
const NOTES = 'written before the crash\n';
/** Each test starts the CLI through tsx twice: seconds each on a busy 2-core machine. */
const PROCESS_TIMEOUT = { timeout: 90_000 };

let target: TestDatabaseTarget;
let environment: Record<string, string>;
let replica: ServiceReplica | undefined;

beforeEach(async () => {
  target = await createTestDatabaseTarget();
  environment = {
    ...target.environment,
    MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_WORKSPACE_MAX_BYTES: String(64 * 1024 * 1024),
  };
});

afterEach(async () => {
  await replica?.stop();
  replica = undefined;
  await target.destroy();
});

async function admin(method: string, route: string, body?: unknown): Promise<Json> {
  const response = await (replica as ServiceReplica).fetch(route, adminRequest(method, body));
  expect(response.status, `${method} ${route}`).toBeLessThan(300);
  return readJson(response);
}

/** A tenant with a sandbox-enabled agent and its read+write key. */
async function createAgent(): Promise<string> {
  const tenant = await admin('POST', '/v1/admin/tenants', { name: 'Crashing' });
  const agent = await admin('POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  const issued = await admin('POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] });
  await admin('PUT', `/v1/admin/agents/${agent.id}/config`, ENABLED);
  await admin('POST', `/v1/admin/agents/${agent.id}/config/publish`);
  return String(issued.key);
}

/** One stateless `tools/call`; its decoded result. */
async function tool(key: string, name: string, args: Record<string, unknown>): Promise<Json> {
  const response = await rawMcp(replica as ServiceReplica, key, toolCall(name, args), { userId: 'uma' });
  expect(response.status).toBe(200);
  const body = await readJson(response);
  const text = body.result?.content?.find((part: { type: string }) => part.type === 'text')?.text;
  return { isError: body.result?.isError === true, value: text ? JSON.parse(text) : undefined };
}

/** Downloads a signed link through the running replica (the link names the configured public URL). */
async function download(url: string): Promise<Buffer> {
  const signed = new URL(url);
  const response = await (replica as ServiceReplica).fetch(`${signed.pathname}${signed.search}`);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function resign(key: string, storagePath: string): Promise<string> {
  const response = await (replica as ServiceReplica).fetch('/v1/uploads/resign', {
    method: 'POST',
    headers: { ...agentHeaders(key, 'uma'), 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePath }),
  });
  expect(response.status).toBe(200);
  return String((await readJson(response)).url);
}

/** State written before the crash: an upload and a workspace file. */
async function writeBeforeCrash(key: string): Promise<{ storagePath: string }> {
  const uploaded = await upload(replica as ServiceReplica, key, { bytes: CSV, filename: 'sales.csv' }, 'uma');
  expect(uploaded.status).toBe(201);
  const written = await tool(key, 'sandbox_exec', { command: `printf '${NOTES.replace('\n', '\\n')}' > notes.txt` });
  expect(written).toMatchObject({ isError: false, value: { exitCode: 0 } });
  return { storagePath: String((await readJson(uploaded)).storagePath) };
}

async function killNow(): Promise<void> {
  const running = replica as ServiceReplica;
  running.process.child.kill('SIGKILL');
  expect(await running.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
  replica = undefined;
}

/**
 * After the restart: nothing partial registered or left (but the files of `kept`, which a live
 * process may still be writing), earlier state intact, new work accepted.
 */
async function expectRecovered(key: string, before: { storagePath: string }, kept: string[] = []): Promise<void> {
  replica = await startReplica(environment);
  const left = (await temporaryLeftovers(target.dataDir)).map((entry) => path.join(target.dataDir, entry.file));
  expect(left.sort()).toEqual([...kept].sort());
  for (const file of kept) await rm(file);
  expect(replica.process.stdout.join('\n')).toContain('removed temporary files a stopped process left');
  const database: Database = await target.open();
  try {
    const consistency = await storedObjectMismatches(target.dataDir, database.db);
    expect(consistency).toEqual({ rows: 1, broken: [], unregistered: [] });
  } finally {
    await database.close();
  }
  expect((await download(await resign(key, before.storagePath))).toString()).toBe(CSV);
  expect(await tool(key, 'sandbox_exec', { command: 'cat notes.txt' })).toMatchObject({
    isError: false,
    value: { exitCode: 0, stdout: NOTES },
  });
  const again = await upload(replica, key, { bytes: pdfOfSize(64 * 1024), filename: 'after.pdf' }, 'uma');
  expect(again.status).toBe(201);
  expect((await readJson(again)).mediaType).toBe('application/pdf');
}

describe('kill -9 of the service, then a restart on the same data directory', PROCESS_TIMEOUT, () => {
  it('mid-upload: the partial spool file is cleaned up at start-up and nothing was registered', async () => {
    replica = await startReplica(environment);
    const key = await createAgent();
    const before = await writeBeforeCrash(key);

    // A large multipart body streamed in part: the service has spooled some of it when it dies.
    const boundary = 'crash-boundary-0123456789';
    const request = http.request(`${replica.url}/v1/uploads`, {
      method: 'POST',
      headers: { ...agentHeaders(key, 'uma'), 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    const failed = new Promise<Error>((resolve) => request.on('error', resolve));
    request.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
    );
    request.write(pdfOfSize(4 * 1024 * 1024).subarray(0, 2 * 1024 * 1024));
    const spooling = await pollUntil(
      () => temporaryLeftovers(target.dataDir),
      (files) => files.some((entry) => entry.size >= 1024 * 1024),
      { timeoutMs: 15_000, intervalMs: 20 },
    );
    expect(spooling.map((entry) => path.dirname(entry.file))).toEqual(['tmp']);
    await killNow();
    expect((await failed).message).toMatch(/socket hang up|ECONNRESET/);
    // The crash really left a partial file behind for the restart to deal with.
    expect((await temporaryLeftovers(target.dataDir)).length).toBe(1);

    // Replicas may share the data directory: a file a live process of this host is writing (this
    // test's own), and a recent one whose writer cannot be told, stay; one a day old goes.
    const tmp = path.join(target.dataDir, 'tmp');
    const live = temporaryFilePath(tmp, 'upload');
    const unknownRecent = path.join(tmp, `upload-${randomUUID()}`);
    const unknownOld = path.join(tmp, `upload-${randomUUID()}`);
    for (const file of [live, unknownRecent, unknownOld]) await writeFile(file, 'in transit');
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    await utimes(unknownOld, twoDaysAgo, twoDaysAgo);

    await expectRecovered(key, before, [live, unknownRecent]);
  });

  it('mid-publish: the partial copy of a 10 MB workspace file is cleaned up and no artifact was registered', async () => {
    replica = await startReplica(environment);
    const key = await createAgent();
    const before = await writeBeforeCrash(key);
    const made = await tool(key, 'sandbox_exec', {
      command: "yes 'north,3' | head -c 10000000 > big.csv && wc -c < big.csv",
    });
    expect(made).toMatchObject({ isError: false, value: { exitCode: 0, stdout: '10000000\n' } });

    // Killed the moment the publish starts writing its copy, long before 10 MB are through.
    const tmp = path.join(target.dataDir, 'tmp');
    await mkdir(tmp, { recursive: true, mode: 0o700 });
    const running = replica;
    const watcher = watch(tmp, (_event, name) => {
      if (String(name).startsWith('publish-')) running.process.child.kill('SIGKILL');
    });
    try {
      const publishing = rawMcp(running, key, toolCall('sandbox_publish_file', { path: 'big.csv' }), {
        userId: 'uma',
      }).then(
        (response) => response.text(),
        (error: Error) => error,
      );
      expect(await running.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await publishing).toBeInstanceOf(Error);
    } finally {
      watcher.close();
    }
    replica = undefined;
    const leftovers = await temporaryLeftovers(target.dataDir);
    expect(leftovers.map((entry) => entry.file.split('-')[0])).toEqual(['tmp/publish']);
    // Cut off mid-copy: the partial copy is all that reached the data directory.
    expect(leftovers[0]?.size).toBeLessThan(10_000_000);

    await expectRecovered(key, before);
    expect(await tool(key, 'sandbox_exec', { command: 'wc -c < big.csv' })).toMatchObject({
      value: { exitCode: 0, stdout: '10000000\n' },
    });
    const published = await tool(key, 'sandbox_publish_file', { path: 'big.csv' });
    expect(published).toMatchObject({ isError: false, value: { file: { size: 10_000_000, mediaType: 'text/csv' } } });
    expect((await download(published.value.file.url)).length).toBe(10_000_000);
  });
});
