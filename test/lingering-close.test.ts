import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../src/http/lingering-close.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { parseRawResponse } from './support/raw-socket.js';
import { startTestService, type TestService } from './support/service.js';
import { PNG_1X1 } from './support/upload.js';

/** The default upload cap. */
const UPLOAD_MAX = 5 * 1024 * 1024;

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

/**
 * A client connection that keeps its sending side open after the server's FIN (as HTTP clients
 * that are still writing a body do), recording what it receives and the first error it meets.
 */
async function connect() {
  const { hostname, port } = new URL(service.url);
  const socket = net.connect({ host: hostname, port: Number(port), allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  let error: string | undefined;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', (failure: NodeJS.ErrnoException) => {
    error ??= failure.code ?? failure.message;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const received = () => Buffer.concat(chunks).toString('latin1');
  return {
    socket,
    received,
    error: () => error,
    closed,
    write: (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    /** Resolves once a whole answer (head and its Content-Length of body) has arrived. */
    async answer(): Promise<{ status: number; body: unknown; head: string }> {
      for (;;) {
        const text = received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? -1);
        if (end !== -1 && length >= 0 && text.length >= end + 4 + length) {
          return { ...parseRawResponse(text), head: text.slice(0, end) };
        }
        if (error) throw new Error(`the connection failed before the answer: ${error}`);
        await delay(5);
      }
    },
  };
}

function uploadHead(length: number, extra: string[] = [], key = fixture.key): string {
  return [
    'POST /v1/uploads HTTP/1.1',
    'Host: 127.0.0.1',
    `Authorization: Bearer ${key}`,
    'X-Chat-User: user-1',
    'Content-Type: multipart/form-data; boundary=bound',
    `Content-Length: ${length}`,
    ...extra,
    '',
    '',
  ].join('\r\n');
}

/** The head of a part in the wrong field and its first bytes (the parser names the field then). */
const WRONG_FIELD = Buffer.from(
  '--bound\r\nContent-Disposition: form-data; name="File"; filename="a.png"\r\nContent-Type: image/png\r\n\r\nPNG',
);

describe('a refusal sent before its body was read', () => {
  it('reaches a client that is still sending: the rest of its body is read and discarded, with no reset', async () => {
    const rest = Buffer.alloc(512 * 1024, 0x41);
    const client = await connect();
    await client.write(uploadHead(WRONG_FIELD.length + rest.length));
    await client.write(WRONG_FIELD);
    // The refusal comes first: the client has sent only the part's head and its first bytes.
    const answer = await client.answer();
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'INVALID_MULTIPART' });
    expect(answer.head).toMatch(/\r\nconnection: close/i);
    // Then the client finishes its body, in pieces, as a streaming client would.
    for (let offset = 0; offset < rest.length; offset += 64 * 1024) {
      await client.write(rest.subarray(offset, offset + 64 * 1024));
      await delay(20);
    }
    client.socket.end();
    await client.closed;
    expect(client.error()).toBeUndefined();
  });

  it(`stops reading after ${LINGER_MAX_BYTES / 1024 / 1024} MiB: a client that goes on sending has its connection closed`, async () => {
    const client = await connect();
    const endless = 8 * 1024 * 1024;
    // Refused from its declared length alone, before a byte of it is read.
    await client.write(uploadHead(WRONG_FIELD.length + endless));
    expect((await client.answer()).status).toBe(413);
    const piece = Buffer.alloc(64 * 1024, 0x42);
    let sent = 0;
    while (sent < endless && !client.error() && !client.socket.destroyed) {
      await client.write(piece);
      sent += piece.length;
    }
    await client.closed;
    expect(client.error()).toMatch(/^(EPIPE|ECONNRESET)$/);
    // Closed once the budget was read, long before the body's end.
    expect(sent).toBeLessThan(endless);
    expect(sent).toBeGreaterThanOrEqual(LINGER_MAX_BYTES);
  });

  it(`stops waiting after ${LINGER_MAX_MS / 1000} s: a client that sends nothing more has its connection closed`, async () => {
    const client = await connect();
    await client.write(uploadHead(WRONG_FIELD.length + 100_000));
    await client.write(WRONG_FIELD);
    expect((await client.answer()).status).toBe(400);
    const answeredAt = performance.now();
    // Still lingering well within the budget: a late byte is taken.
    await delay(LINGER_MAX_MS / 4);
    await client.write('x');
    await delay(200);
    await client.write('x');
    expect(client.error()).toBeUndefined();
    // Past it the server has closed: a byte sent now is answered with a reset, which the write
    // after it reports.
    await delay(LINGER_MAX_MS + 500 - (performance.now() - answeredAt));
    await client.write('y');
    await delay(200);
    await client.write('z');
    await Promise.race([client.closed, delay(2_000)]);
    expect(client.error()).toMatch(/^(EPIPE|ECONNRESET)$/);
  });
});

describe('a keep-alive answer sent before its body was read', () => {
  it('lets the client finish sending, discards the rest, and serves the next request on the same connection', async () => {
    const body = JSON.stringify({ storagePath: `uploads/${'0'.repeat(32)}` });
    const client = await connect();
    // Refused from the head (a wrong key) before the body is sent.
    await client.write(
      [
        'POST /v1/uploads/resign HTTP/1.1',
        'Host: 127.0.0.1',
        'Authorization: Bearer mordn_not-a-real-key',
        'X-Chat-User: user-1',
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        '',
        '',
      ].join('\r\n'),
    );
    const refused = await client.answer();
    expect(refused.status).toBe(401);
    expect(refused.head).not.toMatch(/\r\nconnection: close/i);
    await delay(100);
    await client.write(body);
    // The same connection takes the next request.
    const before = client.received().length;
    await client.write(
      [
        'GET /v1/me HTTP/1.1',
        'Host: 127.0.0.1',
        `Authorization: Bearer ${fixture.key}`,
        'X-Chat-User: user-1',
        '',
        '',
      ].join('\r\n'),
    );
    for (let waited = 0; !/\r\n\r\n\{/.test(client.received().slice(before)); waited += 5) {
      expect(waited, 'no second answer').toBeLessThan(5_000);
      await delay(5);
    }
    expect(client.received().slice(before)).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.error()).toBeUndefined();
    client.socket.destroy();
  });
});

describe('Expect: 100-continue', () => {
  it('a refusal decided from the head (a wrong key) comes before any 100 Continue, and closes', async () => {
    const client = await connect();
    await client.write(uploadHead(1000, ['Expect: 100-continue'], 'mordn_not-a-real-key'));
    const answer = await client.answer();
    expect(answer.status).toBe(401);
    expect(client.received()).not.toMatch(/100 Continue/);
    expect(answer.head).toMatch(/\r\nconnection: close/i);
  });

  it('a declared length over the limit is refused (413) before any 100 Continue', async () => {
    const client = await connect();
    await client.write(uploadHead(UPLOAD_MAX * 2, ['Expect: 100-continue']));
    const answer = await client.answer();
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 'FILE_TOO_LARGE' });
    expect(client.received()).not.toMatch(/100 Continue/);
  });

  it('an upload the service takes gets 100 Continue once it starts reading, then its 201', async () => {
    const body = Buffer.concat([
      Buffer.from('--bound\r\nContent-Disposition: form-data; name="file"; filename="pixel.png"\r\n\r\n'),
      Buffer.from(PNG_1X1),
      Buffer.from('\r\n--bound--\r\n'),
    ]);
    const client = await connect();
    await client.write(uploadHead(body.length, ['Expect: 100-continue']));
    for (let waited = 0; !client.received().startsWith('HTTP/1.1 100 Continue\r\n\r\n'); waited += 5) {
      expect(waited, `no 100 Continue; received ${JSON.stringify(client.received())}`).toBeLessThan(5_000);
      await delay(5);
    }
    await client.write(body);
    const answer = await client.answer();
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ filename: 'pixel.png', mediaType: 'image/png' });
    client.socket.destroy();
  });
});
