import http from 'node:http';
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { eventually } from './support/poll.js';
import { type MordnProcess, spawnMordn } from './support/process.js';

const ADMIN_TOKEN = 'shutdown-test-admin-token';
let target: TestDatabaseTarget;
let service: MordnProcess;
let url: URL;

beforeEach(async () => {
  target = await createTestDatabaseTarget();
  service = spawnMordn(['serve'], {
    ...target.environment,
    PORT: '0',
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SHUTDOWN_TIMEOUT_MS: '1500',
  });
  url = new URL(String((await service.waitForLog((line) => line.msg === 'mordn listening')).url));
});
afterEach(async () => {
  service.child.kill('SIGKILL');
  await service.exited;
  await target.destroy();
});

/** Starts a chunked admin request and leaves it open: an in-flight request under our control. */
function openSlowRequest() {
  const request = http.request(url, {
    method: 'POST',
    path: '/v1/admin/tenants',
    agent: false,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (incoming) => {
      let body = '';
      incoming.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
  request.write('{"name":"In flight');
  return { request, response };
}

function connectionRefused(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', () => resolve(true));
  });
}

const POLL = { timeoutMs: 5_000, intervalMs: 25 };

/** Waits until the service is inside the slow request (the in-flight gauge counts it and the scrape). */
async function untilInFlight(): Promise<void> {
  const reached = await eventually(async () => {
    const metrics = await (await fetch(new URL('/metrics', url))).text();
    return Number(/^mordn_http_requests_in_flight (\d+)$/m.exec(metrics)?.[1] ?? 0) >= 2;
  }, POLL);
  expect(reached).toBe(true);
}

describe('graceful shutdown', { timeout: 90_000 }, () => {
  it('on SIGTERM stops accepting, finishes the in-flight request, closes the database and exits 0', async () => {
    const slow = openSlowRequest();
    await untilInFlight();
    service.child.kill('SIGTERM');
    await service.waitForLog((line) => line.msg === 'shutting down');
    expect(await eventually(connectionRefused, POLL)).toBe(true);

    slow.request.end('"}');
    const response = await slow.response;
    expect(response.status).toBe(201);
    expect(JSON.parse(response.body).name).toBe('In flight');

    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.stdout.some((line) => line.includes('"shutdown complete"'))).toBe(true);

    const database = await target.open();
    try {
      expect(await database.db.selectFrom('tenants').select('name').execute()).toEqual([{ name: 'In flight' }]);
    } finally {
      await database.close();
    }
  });

  it('cuts a request that outlives the shutdown bound and still exits', async () => {
    const stuck = openSlowRequest();
    stuck.response.catch(() => undefined);
    await untilInFlight();
    const started = Date.now();
    service.child.kill('SIGINT');
    const exit = await service.exited;
    expect(exit.code).toBe(0);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(10_000);
    expect(service.stdout.some((line) => line.includes('shutdown timeout reached'))).toBe(true);
    stuck.request.destroy();
  });
});
