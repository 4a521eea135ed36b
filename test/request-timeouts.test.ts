import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type MordnProcess, spawnMordn } from './support/process.js';
import { openRawConnection, parseRawResponse } from './support/raw-socket.js';
import { startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { PNG_1X1 } from './support/upload.js';

const IDLE_TIMEOUT_MS = 400;

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService({
    environment: {
      MORDN_REQUEST_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
      // Never reached: a stalled chat body is refused before the model is asked anything.
      MORDN_MODEL: 'openai-compatible:stall',
      MORDN_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
    },
  });
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

async function storedRows() {
  return service.database.db.selectFrom('stored_files').select('storage_path').execute();
}

async function storedObjects(): Promise<string[]> {
  return readdir(path.join(service.config.dataDir, 'files', 'uploads')).catch(() => []);
}

async function tempFiles(): Promise<string[]> {
  return readdir(path.join(service.config.dataDir, 'tmp')).catch(() => []);
}

/** The head of an upload request; `framing` is `Content-Length: …` or `Transfer-Encoding: chunked`. */
function uploadHead(framing: string): string {
  return [
    'POST /v1/uploads HTTP/1.1',
    'Host: 127.0.0.1',
    `Authorization: Bearer ${fixture.key}`,
    'X-Chat-User: user-1',
    'Content-Type: multipart/form-data; boundary=bound',
    framing,
    '',
    '',
  ].join('\r\n');
}

const PART_HEAD = '--bound\r\nContent-Disposition: form-data; name="file"; filename="pixel.png"\r\n\r\n';
const PART_TAIL = '\r\n--bound--\r\n';

describe('an upload whose body stalls', () => {
  it.each([
    ['Content-Length', (body: Buffer) => ({ framing: `Content-Length: ${body.length + 4096}`, first: body })],
    [
      'chunked',
      (body: Buffer) => ({
        framing: 'Transfer-Encoding: chunked',
        first: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]),
      }),
    ],
  ])(
    'framed by %s is answered 408 REQUEST_TIMEOUT naming the limit, closed, and leaves no temp file or row',
    async (_framing, frame) => {
      const rowsBefore = await storedRows();
      const objectsBefore = await storedObjects();
      // Part of the file arrives, then nothing more: the client keeps the connection open, silent.
      const { framing, first } = frame(Buffer.concat([Buffer.from(PART_HEAD), Buffer.from(PNG_1X1)]));
      const connection = await openRawConnection(service.url);
      await connection.write(uploadHead(framing));
      await connection.write(first);
      const quietSince = performance.now();

      const { response, closedAt } = await connection.closed;
      const answer = parseRawResponse(response);
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({
        status: 408,
        code: 'REQUEST_TIMEOUT',
        detail: `The upload sent nothing for ${IDLE_TIMEOUT_MS} ms (the idle limit) and was abandoned; nothing was stored.`,
      });
      expect(response).toMatch(/\r\nconnection: close\r\n/i);
      // Closed after the idle limit, not before it, and not long after.
      expect(closedAt - quietSince).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 50);
      expect(closedAt - quietSince).toBeLessThan(IDLE_TIMEOUT_MS + 3_000);

      expect(await tempFiles()).toEqual([]);
      expect(await storedRows()).toEqual(rowsBefore);
      expect(await storedObjects()).toEqual(objectsBefore);
      const logged = service.logs
        .map((line) => JSON.parse(line))
        .find((line) => line.msg === 'upload abandoned: the client stopped sending');
      expect(logged).toMatchObject({ idleTimeoutMs: IDLE_TIMEOUT_MS });
    },
  );

  it('is only about silence: a slow upload that keeps sending for longer than the limit is stored', async () => {
    const body = Buffer.concat([Buffer.from(PART_HEAD), Buffer.from(PNG_1X1), Buffer.from(PART_TAIL)]);
    const connection = await openRawConnection(service.url);
    await connection.write(uploadHead(`Content-Length: ${body.length}`));
    // One slice every quarter of the limit: about three times the limit in all.
    const slices = 12;
    const sliceSize = Math.ceil(body.length / slices);
    const started = performance.now();
    for (let offset = 0; offset < body.length; offset += sliceSize) {
      await connection.write(body.subarray(offset, offset + sliceSize));
      await delay(IDLE_TIMEOUT_MS / 4);
    }
    expect(performance.now() - started).toBeGreaterThan(2 * IDLE_TIMEOUT_MS);
    await delay(200);
    const answer = parseRawResponse(connection.received());
    connection.socket.destroy();
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ filename: 'pixel.png', mediaType: 'image/png', size: PNG_1X1.length });
  });
});

/** Everything a stalled request could have left behind: rows of every table it writes, and files. */
async function leftovers() {
  const { db } = service.database;
  const count = async (table: 'stored_files' | 'chats' | 'tenants') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    storedFiles: await count('stored_files'),
    chats: await count('chats'),
    tenants: await count('tenants'),
    objects: await storedObjects(),
    temp: await tempFiles(),
  };
}

/**
 * Sends `head` and the first bytes of a body announced as longer, then nothing more, and waits for
 * the server to answer and close the connection.
 */
async function stall(head: string[], firstBytes: string) {
  const connection = await openRawConnection(service.url);
  await connection.write([...head, 'Host: 127.0.0.1', 'Content-Length: 4096', '', ''].join('\r\n'));
  await connection.write(firstBytes);
  const quietSince = performance.now();
  const { response, closedAt } = await connection.closed;
  return { answer: parseRawResponse(response), response, quietFor: closedAt - quietSince };
}

const agent = () => [`Authorization: Bearer ${fixture.key}`, 'X-Chat-User: user-1'];
const json = 'Content-Type: application/json';
const multipart = 'Content-Type: multipart/form-data; boundary=bound';

describe('a request body that stalls, on every route family', () => {
  it.each([
    [
      'an upload, before its first part header',
      () => ['POST /v1/uploads HTTP/1.1', ...agent(), multipart],
      '--bound\r',
      'The upload',
    ],
    [
      'an upload, between two parts',
      () => ['POST /v1/uploads HTTP/1.1', ...agent(), multipart],
      '--bound\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n',
      'The upload',
    ],
    ['a chat turn', () => ['POST /v1/chat HTTP/1.1', ...agent(), json], '{"id":"c1","mess', 'The request'],
    [
      'an MCP call',
      () => ['POST /v1/sandbox/mcp HTTP/1.1', ...agent(), json, 'Accept: application/json, text/event-stream'],
      '{"jsonrpc":"2.0","id":1,"meth',
      'The request',
    ],
    [
      'an admin write',
      () => ['POST /v1/admin/tenants HTTP/1.1', `Authorization: Bearer ${TEST_ADMIN_TOKEN}`, json],
      '{"name":"Sta',
      'The request',
    ],
    ['a re-sign', () => ['POST /v1/uploads/resign HTTP/1.1', ...agent(), json], '{"storagePath":"up', 'The request'],
  ])(
    '%s is answered 408 REQUEST_TIMEOUT within the idle limit, closed, and leaves nothing behind',
    async (_name, head, firstBytes, subject) => {
      const before = await leftovers();
      const { answer, response, quietFor } = await stall(head(), firstBytes);
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({
        status: 408,
        code: 'REQUEST_TIMEOUT',
        detail: `${subject} sent nothing for ${IDLE_TIMEOUT_MS} ms (the idle limit) and was abandoned; nothing was stored.`,
      });
      expect(response).toMatch(/\r\nconnection: close\r\n/i);
      expect(quietFor).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 50);
      expect(quietFor).toBeLessThan(IDLE_TIMEOUT_MS + 3_000);
      expect(await leftovers()).toEqual(before);
    },
  );

  it('an admin write that stalled is in the audit log as a failed write (408), and nothing else changed', async () => {
    const before = await leftovers();
    const { answer } = await stall(
      ['POST /v1/admin/tenants HTTP/1.1', `Authorization: Bearer ${TEST_ADMIN_TOKEN}`, json],
      '{"name":"Audited',
    );
    expect(answer.status).toBe(408);
    const audited = await service.database.db
      .selectFrom('admin_audit')
      .select(['route', 'status', 'outcome'])
      .orderBy('at', 'desc')
      .executeTakeFirstOrThrow();
    expect(audited).toEqual({ route: '/v1/admin/tenants', status: 408, outcome: 'failed' });
    expect(await leftovers()).toEqual(before);
  });
});

/** Opens a connection, starts a head and keeps adding header bytes without ever ending it. */
async function trickleHead(url: string): Promise<{ response: string; elapsed: number }> {
  const connection = await openRawConnection(url);
  const started = performance.now();
  await connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  // A header byte every 50 ms: the connection is never idle, but the head never ends.
  const trickle = setInterval(() => void connection.write('X').catch(() => undefined), 50);
  try {
    const { response, closedAt } = await connection.closed;
    return { response, elapsed: closedAt - started };
  } finally {
    clearInterval(trickle);
  }
}

describe('MORDN_REQUEST_IDLE_TIMEOUT_MS', () => {
  it('defaults to 30 s and refuses values outside 100 ms to 300 s, naming the variable', () => {
    expect(loadConfig({}).requestIdleTimeoutMs).toBe(30_000);
    expect(loadConfig({ MORDN_REQUEST_IDLE_TIMEOUT_MS: '2500' }).requestIdleTimeoutMs).toBe(2_500);
    for (const value of ['99', '300001', '30s', '-1']) {
      expect(() => loadConfig({ MORDN_REQUEST_IDLE_TIMEOUT_MS: value })).toThrow(
        `MORDN_REQUEST_IDLE_TIMEOUT_MS: must be an integer from 100 to 300000 (got "${value}")`,
      );
    }
  });
});

describe('the server bound on a request head', () => {
  it('is 30 s unless told otherwise', async () => {
    const server = await startServer({ fetch: () => new Response('ok'), host: '127.0.0.1', port: 0 });
    try {
      expect(server.server.headersTimeout).toBe(30_000);
    } finally {
      await server.close(100);
    }
  });

  it('answers 408 and closes a connection whose head is not complete in time', async () => {
    const server = await startServer({
      fetch: () => new Response('ok'),
      host: '127.0.0.1',
      port: 0,
      requestHeadTimeoutMs: IDLE_TIMEOUT_MS,
    });
    try {
      const { response, elapsed } = await trickleHead(server.url);
      expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(elapsed).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(IDLE_TIMEOUT_MS + 3_000);
    } finally {
      await server.close(100);
    }
  });
});

describe('a request head that never completes, under mordn serve', () => {
  let target: TestDatabaseTarget;
  let mordn: MordnProcess;
  let url: string;

  // The real `mordn serve`, so the operator's variable is what sets the server's bound.
  beforeAll(async () => {
    target = await createTestDatabaseTarget();
    mordn = spawnMordn(['serve'], {
      ...target.environment,
      PORT: '0',
      MORDN_REQUEST_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    });
    url = String((await mordn.waitForLog((line) => line.msg === 'mordn listening', 60_000)).url);
  }, 90_000);
  afterAll(async () => {
    mordn?.child.kill('SIGTERM');
    await mordn?.exited;
    await target?.destroy();
  });

  it('is answered 408 and closed once MORDN_REQUEST_IDLE_TIMEOUT_MS passes, even while header bytes trickle in', async () => {
    const { response, elapsed } = await trickleHead(url);
    expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(IDLE_TIMEOUT_MS + 3_000);
    // The service itself is unaffected.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});
