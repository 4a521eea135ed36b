import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { type RunningServer, startServer } from '../src/server.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { sendRawCase } from './support/raw-http-fuzz.js';
import { startTestService, type TestService } from './support/service.js';
import { pdfOfSize, upload } from './support/upload.js';

/**
 * The stream paths besides uploads, each cut short from either side: downloads the client leaves,
 * and `createMordnHandler` between a browser that vanishes and an API that dies mid-answer. A
 * stream error nobody handles would end this process (vitest reports it as an unhandled error);
 * each test also checks that nothing is left open and that serving goes on.
 */

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const openDescriptors = () => readdirSync('/proc/self/fd').length;

/**
 * Sends `head` (a request line and headers, plus any body) on a raw socket to `url`'s host, waits
 * until `minBytes` of the answer arrived, then vanishes without a word.
 */
function abandonAfter(url: URL, head: string, minBytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`only ${received} bytes arrived from ${url.pathname}`));
    }, 10_000);
    socket.on('error', () => undefined);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received >= minBytes) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
  });
}

describe('downloads', () => {
  let service: TestService;
  let fixture: AgentFixture;
  beforeAll(async () => {
    service = await startTestService();
    fixture = await createAgentFixture(service.database.db);
  });
  afterAll(() => service.close());

  it('closes the file of every download its client leaves mid-body, and keeps serving the file whole', async () => {
    const bytes = pdfOfSize(5 * MiB);
    const uploaded = await readJson(await upload(service, fixture.key, { bytes, filename: 'big.pdf' }));
    const url = new URL(uploaded.url);
    // Compared by digest: a deep equality of 5 MiB arrays takes seconds.
    const digest = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
    const whole = async () => digest(new Uint8Array(await (await fetch(url)).arrayBuffer()));
    expect(await whole()).toBe(digest(bytes));
    const before = openDescriptors();

    // Well past the head and into the body, far from its end.
    const head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`;
    for (let index = 0; index < 30; index += 1) await abandonAfter(url, head, 256 * 1024);
    const headOnly = await fetch(url, { method: 'HEAD' });
    expect(headOnly.status).toBe(200);
    expect(headOnly.headers.get('content-length')).toBe(String(5 * MiB));

    // Each abandoned download held a file descriptor and a socket while it ran.
    const after = await pollUntil(openDescriptors, (open) => open <= before + 2, { timeoutMs: 3_000 });
    expect(after).toBeLessThanOrEqual(before + 2);
    expect(await whole()).toBe(digest(bytes));
  });
});

describe('JSON request bodies cut short', () => {
  let service: TestService;
  let fixture: AgentFixture;
  beforeAll(async () => {
    service = await startTestService({
      // Chat reads its body only once a model is configured; this one is never reached.
      environment: { MORDN_MODEL: 'openai-compatible:none', MORDN_MODEL_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    fixture = await createAgentFixture(service.database.db);
  });
  afterAll(() => service.close());

  // The chat handler answers its own problems (it is also a library for hosts), so the access
  // line of /v1/chat carries the status only.
  it.each([
    ['POST', '/v1/uploads/resign', { status: 400, code: 'REQUEST_INTERRUPTED' }],
    ['DELETE', '/v1/uploads', { status: 400, code: 'REQUEST_INTERRUPTED' }],
    ['POST', '/v1/sandbox/mcp', { status: 400, code: 'REQUEST_INTERRUPTED' }],
    ['POST', '/v1/chat', { status: 400 }],
  ])(
    '%s %s: a body that ends early is a 400 REQUEST_INTERRUPTED, never an internal error',
    async (method, route, logged) => {
      const url = new URL(service.url);
      const since = service.logs.length;
      // 18 of the 100 bytes announced, then the client stops sending and hangs up its side.
      await sendRawCase(Number(url.port), {
        summary: `${method} ${route} cut short`,
        head:
          `${method} ${route} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${fixture.key}\r\n` +
          'X-Chat-User: user-1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
          'Content-Length: 100\r\n\r\n',
        pieces: [Buffer.from('{"storagePaths": [')],
        ending: 'half-close',
      });
      const lines = () => service.logs.slice(since).map((line) => JSON.parse(line));
      const completed = await pollUntil(
        () => lines().find((line) => line.msg === 'request completed' && line.route === route),
        (line) => line !== undefined,
        { timeoutMs: 3_000, intervalMs: 20 },
      );
      expect(completed).toMatchObject(logged);
      expect(lines().filter((line) => line.level >= 50)).toEqual([]);
    },
  );
});

/** A stand-in for the Mordn API whose answers the test scripts, recording what reached it. */
async function startFakeApi(handle: (request: http.IncomingMessage, response: http.ServerResponse) => void) {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The handler mounted as a host app would mount it, over real HTTP. */
async function startHost(apiOrigin: string): Promise<RunningServer> {
  const handler = createMordnHandler({
    apiKey: 'mordn_test_key',
    getUserId: () => 'browser-user',
    selfBaseUrl: apiOrigin,
  });
  return startServer({
    host: '127.0.0.1',
    port: 0,
    fetch: (request) => {
      const method = request.method as 'GET' | 'POST' | 'DELETE' | 'OPTIONS';
      return handler[method](request);
    },
  });
}

describe('createMordnHandler between a browser and the API', () => {
  const upstream = { chat: [] as string[], uploads: [] as string[] };
  let api: Awaited<ReturnType<typeof startFakeApi>>;
  let host: RunningServer;

  beforeAll(async () => {
    api = await startFakeApi((request, response) => {
      if (request.url === '/v1/chat') {
        request.resume();
        response.writeHead(200, { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' });
        response.write('data: {"type":"start"}\n\n');
        upstream.chat.push('started');
        const ticker = setInterval(() => response.write('data: {"type":"text-delta","id":"t","delta":"x"}\n\n'), 20);
        response.on('close', () => {
          clearInterval(ticker);
          upstream.chat.push('closed');
        });
        // An API that dies mid-answer: the connection is cut without a proper end.
        setTimeout(() => request.socket.destroy(), 100);
        return;
      }
      if (request.url === '/v1/uploads') {
        let bytes = 0;
        request.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        request.on('end', () => {
          upstream.uploads.push(`complete ${bytes}`);
          response.writeHead(201, { 'content-type': 'application/json' }).end('{}');
        });
        request.on('aborted', () => upstream.uploads.push(`aborted ${bytes}`));
        request.on('error', () => undefined);
        return;
      }
      response.writeHead(404).end();
    });
    host = await startHost(api.origin);
  });
  afterAll(async () => {
    await host.close(1_000);
    await api.close();
  });

  const hostAlive = async () => (await fetch(`${host.url}/api/chat`, { method: 'OPTIONS' })).status;

  it('ends the browser stream when the API dies mid-answer, and keeps serving', async () => {
    const response = await fetch(`${host.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'c1', messages: [] }),
    });
    expect(response.status).toBe(200);
    const outcome = await response.text().then(
      (text) => ({ ended: 'normally', text }),
      (error: Error) => ({ ended: 'with an error', text: error.message }),
    );
    // Whatever arrived before the cut was passed through; the stream never hangs.
    expect(outcome.ended).toBe('with an error');
    expect(upstream.chat).toContain('closed');
    expect(await hostAlive()).toBe(204);
  });

  it('cuts the API request when the browser vanishes mid-stream', async () => {
    const closedBefore = upstream.chat.filter((entry) => entry === 'closed').length;
    const body = JSON.stringify({ id: 'c2', messages: [] });
    const url = new URL(`${host.url}/api/chat`);
    const head = `POST /api/chat HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    // The head and the first event, then gone while the API is still streaming.
    await abandonAfter(url, head, 1);
    await sleep(300);
    expect(upstream.chat.filter((entry) => entry === 'closed').length).toBeGreaterThan(closedBefore);
    expect(await hostAlive()).toBe(204);
  });

  it('passes an upload whose browser vanishes mid-body on as an interrupted request, and keeps serving', async () => {
    const url = new URL(`${host.url}/api/chat`);
    const part = '--b\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\n\r\n%PDF-1.4\n';
    for (let index = 0; index < 10; index += 1) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(Number(url.port), url.hostname, () => {
          socket.write(
            `POST /api/chat HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: ${1 * MiB}\r\n\r\n`,
          );
          socket.write(part + 'A'.repeat(128 * 1024));
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50);
        });
        socket.on('error', () => undefined);
      });
    }
    await sleep(300);
    expect(upstream.uploads).toHaveLength(10);
    for (const entry of upstream.uploads) expect(entry).toMatch(/^aborted \d+$/);
    expect(await hostAlive()).toBe(204);
  });
});
