import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { type Json, readJson } from './support/json.js';
import {
  fillFilesystem,
  type LoopFilesystem,
  loopFilesystemUnavailable,
  mountLoopFilesystem,
} from './support/loop-filesystem.js';
import { type ServiceReplica, startReplica } from './support/replica.js';
import { adminRequest, agentHeaders, TEST_ADMIN_TOKEN } from './support/service.js';
import { storedObjectMismatches, temporaryLeftovers } from './support/stored-objects.js';
import { PNG_1X1, pdfOfSize, upload } from './support/upload.js';

/**
 * The data directory's disk filling up under a running `mordn serve` (SQLite and local storage
 * both on a small loop-mounted ext4): uploads are refused with a clear 507, nothing already
 * stored is damaged, nothing half-written is left, and the same process accepts uploads again
 * as soon as space is freed.
 */

const unavailable = await loopFilesystemUnavailable();
if (unavailable && process.env.CI === 'true') {
  throw new Error(`fault-disk-full needs a loop-mounted ext4 data directory, but ${unavailable}.`);
}

const DISK_BYTES = 32 * 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let disk: LoopFilesystem | undefined;
let replica: ServiceReplica | undefined;
let dataDir: string;
let key: string;

async function admin(method: string, route: string, body?: unknown): Promise<Json> {
  const response = await (replica as ServiceReplica).fetch(route, adminRequest(method, body));
  expect(response.status, `${method} ${route}`).toBeLessThan(300);
  return readJson(response);
}

/** Downloads a stored file through a freshly signed link, as a client would. */
async function downloadStored(storagePath: string): Promise<Buffer> {
  const running = replica as ServiceReplica;
  const resigned = await running.fetch('/v1/uploads/resign', {
    method: 'POST',
    headers: { ...agentHeaders(key), 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePath }),
  });
  expect(resigned.status).toBe(200);
  const signed = new URL(String((await readJson(resigned)).url));
  const response = await running.fetch(`${signed.pathname}${signed.search}`);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function registeredConsistency() {
  const database = await openDatabase({ kind: 'sqlite', file: path.join(dataDir, 'mordn.db') });
  try {
    return await storedObjectMismatches(dataDir, database.db);
  } finally {
    await database.close();
  }
}

beforeAll(async () => {
  if (unavailable) return;
  disk = await mountLoopFilesystem(DISK_BYTES);
  dataDir = path.join(disk.mountPoint, 'data');
  replica = await startReplica({ MORDN_DATA_DIR: dataDir, MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN });
  const tenant = await admin('POST', '/v1/admin/tenants', { name: 'Full disk' });
  const agent = await admin('POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'Agent' });
  key = String((await admin('POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] })).key);
}, 60_000);

afterAll(async () => {
  const exit = await replica?.stop();
  await disk?.destroy();
  // The service shut down cleanly, full disk or not.
  if (exit) expect(exit).toEqual({ code: 0, signal: null });
});

describe.skipIf(unavailable !== undefined)(
  `a full data directory disk${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    it('refuses uploads with 507 INSUFFICIENT_STORAGE, keeps what was stored, and recovers once space is freed', {
      timeout: 60_000,
    }, async () => {
      const running = replica as ServiceReplica;
      const pdf = pdfOfSize(1024 * 1024);
      const stored: Array<{ storagePath: string; bytes: Uint8Array }> = [];
      for (const file of [
        { bytes: PNG_1X1, filename: 'pixel.png', type: 'image/png' },
        { bytes: pdf, filename: 'report.pdf', type: 'application/pdf' },
      ]) {
        const response = await upload(running, key, file);
        expect(response.status).toBe(201);
        stored.push({ storagePath: String((await readJson(response)).storagePath), bytes: file.bytes });
      }

      const filler = path.join(disk?.mountPoint as string, 'filler');
      expect(await fillFilesystem(filler)).toBeGreaterThan(DISK_BYTES / 2);

      // A small file and one far larger than any space left: both refused the same clear way.
      for (const file of [
        { bytes: pdfOfSize(8 * 1024), filename: 'small.pdf', type: 'application/pdf' },
        { bytes: pdfOfSize(2 * 1024 * 1024), filename: 'large.pdf', type: 'application/pdf' },
      ]) {
        const refused = await upload(running, key, file);
        expect(refused.status, file.filename).toBe(507);
        expect(refused.headers.get('content-type')).toBe('application/problem+json');
        const problem = await readJson(refused);
        expect(problem).toMatchObject({
          status: 507,
          code: 'INSUFFICIENT_STORAGE',
          title: 'Insufficient Storage',
          detail: 'The server has no disk space left for this file; nothing was stored. Retry later.',
        });
        expect(JSON.stringify(problem)).not.toMatch(/ENOSPC|stack|at \//);
      }
      // The refusals were logged as a full disk, not as an unexpected failure.
      expect(running.process.stdout.join('\n')).toContain('upload refused: the disk is full');
      expect(running.process.stdout.join('\n')).not.toContain('"msg":"unexpected error"');

      // Nothing corrupted or half-written: the database is whole, every row has its exact bytes,
      // no object lacks a row, nothing is left in transit, and earlier files still download.
      expect(await temporaryLeftovers(dataDir)).toEqual([]);
      const sqlite = new Sqlite(path.join(dataDir, 'mordn.db'), { readonly: true });
      try {
        expect(sqlite.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        sqlite.close();
      }
      expect(await registeredConsistency()).toEqual({ rows: 2, broken: [], unregistered: [] });
      for (const file of stored) expect(sha256(await downloadStored(file.storagePath))).toBe(sha256(file.bytes));
      expect((await running.fetch('/healthz')).status).toBe(200);

      // Space comes back: the same process (no restart) accepts and serves uploads again.
      await rm(filler);
      const again = pdfOfSize(2 * 1024 * 1024);
      const accepted = await upload(running, key, { bytes: again, filename: 'again.pdf', type: 'application/pdf' });
      expect(accepted.status).toBe(201);
      const storagePath = String((await readJson(accepted)).storagePath);
      expect(sha256(await downloadStored(storagePath))).toBe(sha256(again));
      expect(await registeredConsistency()).toEqual({ rows: 3, broken: [], unregistered: [] });
      expect(running.process.child.exitCode).toBeNull();
    });
  },
);
