import http from 'node:http';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createApiFetch,
  createOriginFetch,
  effectiveTimeout,
  MAX_API_REQUEST_MS,
  MAX_API_RESPONSE_BYTES,
} from '../src/hosted/api-fetch.js';
import { isForbiddenAddress } from '../src/net/address-policy.js';
import { createSsrfSafeFetch, type ResolvedAddress } from '../src/net/ssrf-fetch.js';

const KiB = 1024;
const MCP_PATH = /^\/v1\/sandbox\/mcp$/;

/** What a test server saw: connections, requests, and responses cut off before they were finished. */
interface RecordingServer {
  readonly host: string;
  readonly port: number;
  readonly origin: string;
  connections: number;
  requests: string[];
  /** Resolves with the request path once a response to it is closed before the server finished it. */
  closedEarly(path: string): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes `size` bytes in 16 KiB chunks, pausing between them, until done or the client goes away. */
async function trickle(response: http.ServerResponse, size: number, pauseMs = 2): Promise<void> {
  for (let sent = 0; sent < size && !response.destroyed; sent += 16 * KiB) {
    response.write(Buffer.alloc(Math.min(16 * KiB, size - sent), 0x61));
    await sleep(pauseMs);
  }
  if (!response.destroyed) response.end();
}

/** Behaviour chosen by the `case` query parameter (only the path is policed, so tests steer with it). */
function respond(server: RecordingServer, request: http.IncomingMessage, response: http.ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://server');
  const body: Buffer[] = [];
  request.on('data', (part: Buffer) => body.push(part));
  request.on('end', () => {
    switch (url.searchParams.get('case')) {
      case 'sse':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        void (async () => {
          for (const id of [1, 2, 3]) {
            response.write(`id: ${id}\ndata: {"n":${id}}\n\n`);
            await sleep(20);
          }
          response.end();
        })();
        return;
      case 'sse-endless':
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        void (async () => {
          while (!response.destroyed) {
            response.write(`data: ${'x'.repeat(KiB)}\n\n`);
            await sleep(2);
          }
        })();
        return;
      case 'redirect-same':
        response.writeHead(302, { location: '/v1/sandbox/mcp?case=target' }).end();
        return;
      case 'redirect-external':
        response.writeHead(302, { location: url.searchParams.get('to') ?? '' }).end();
        return;
      case 'large-declared':
        response.writeHead(200, { 'content-length': String(2 * MAX_API_RESPONSE_BYTES) });
        void trickle(response, 2 * MAX_API_RESPONSE_BYTES, 20);
        return;
      case 'large-chunked':
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        void trickle(response, 4 * MAX_API_RESPONSE_BYTES);
        return;
      case 'slow':
        return; // never answers
      case 'slow-body':
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"partial":');
        return; // never finishes
      case 'no-content':
        response.writeHead(204).end();
        return;
      default:
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            server: server.host,
            method: request.method,
            body: Buffer.concat(body).toString(),
            user: request.headers['x-chat-user'] ?? null,
            cookie: request.headers.cookie ?? null,
          }),
        );
    }
  });
}

async function startServer(host = '127.0.0.1', port = 0): Promise<RecordingServer> {
  const waiting = new Map<string, () => void>();
  const earlyCloses = new Set<string>();
  const server = http.createServer((request, response) => {
    const path = request.url ?? '/';
    recording.requests.push(path);
    response.on('close', () => {
      if (response.writableFinished) return;
      earlyCloses.add(path);
      waiting.get(path)?.();
    });
    respond(recording, request, response);
  });
  server.on('connection', () => {
    recording.connections += 1;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  const recording: RecordingServer = {
    host,
    port: bound,
    origin: `http://${host}:${bound}`,
    connections: 0,
    requests: [],
    closedEarly: (path) =>
      earlyCloses.has(path) ? Promise.resolve() : new Promise((resolve) => waiting.set(path, () => resolve())),
    reset() {
      recording.connections = 0;
      recording.requests = [];
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return recording;
}

let api: RecordingServer;
let canary: RecordingServer;

beforeAll(async () => {
  api = await startServer();
  canary = await startServer();
});
afterAll(async () => {
  await api.close();
  await canary.close();
});
beforeEach(() => {
  api.reset();
  canary.reset();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const mcpUrl = (testCase?: string) => `${api.origin}/v1/sandbox/mcp${testCase ? `?case=${testCase}` : ''}`;
const apiFetchFor = (options: { maxResponseBytes?: number; timeoutMs?: number } = {}) =>
  createApiFetch({ origin: api.origin, allowedPaths: [MCP_PATH], ...options });

async function readAll(response: Response): Promise<{ bytes: number; error: unknown }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, error: undefined };
      bytes += value.byteLength;
    }
  } catch (error) {
    return { bytes, error };
  }
}

describe('createApiFetch: where requests may go', () => {
  it('reaches an allowed path with the caller’s method, headers and body, and adds no cookies', async () => {
    const response = await apiFetchFor()(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-chat-user': 'user-1' },
      body: '{"jsonrpc":"2.0"}',
    });
    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      server: '127.0.0.1',
      method: 'POST',
      body: '{"jsonrpc":"2.0"}',
      user: 'user-1',
      cookie: null,
    });
    expect(api.requests).toEqual(['/v1/sandbox/mcp']);
  });

  it('streams an SSE body through a reader, event by event', async () => {
    const response = await apiFetchFor()(mcpUrl('sse'), { headers: { accept: 'text/event-stream' } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    for (let part = await reader.read(); !part.done; part = await reader.read()) text += part.value;
    expect(text).toBe('id: 1\ndata: {"n":1}\n\nid: 2\ndata: {"n":2}\n\nid: 3\ndata: {"n":3}\n\n');
  });

  it('accepts URL and Request inputs, and answers without a body when there is none', async () => {
    const apiFetch = apiFetchFor();
    expect(await (await apiFetch(new URL(mcpUrl()))).json()).toMatchObject({ method: 'GET' });
    const request = new Request(mcpUrl(), { method: 'POST', body: 'from a Request' });
    expect(await (await apiFetch(request)).json()).toMatchObject({ method: 'POST', body: 'from a Request' });
    const empty = await apiFetch(mcpUrl('no-content'));
    expect(empty.status).toBe(204);
    expect(await empty.text()).toBe('');
  });

  it.each([
    ['another path', () => `${api.origin}/v1/admin/tenants`],
    ['a longer path', () => `${api.origin}/v1/sandbox/mcp/extra`],
    ['a trailing slash', () => `${api.origin}/v1/sandbox/mcp/`],
    ['a path with a suffix', () => `${api.origin}/v1/sandbox/mcpx`],
    ['a path escaping with dot segments', () => `${api.origin}/v1/sandbox/mcp/../../admin/tenants`],
    ['a percent-encoded path', () => `${api.origin}/v1/sandbox/%6Dcp`],
    ['another port', () => `${canary.origin}/v1/sandbox/mcp`],
    ['another loopback host', () => `http://127.0.0.2:${api.port}/v1/sandbox/mcp`],
    ['localhost', () => `http://localhost:${api.port}/v1/sandbox/mcp`],
    ['IPv6 loopback', () => `http://[::1]:${api.port}/v1/sandbox/mcp`],
    ['https on the same host and port', () => `https://127.0.0.1:${api.port}/v1/sandbox/mcp`],
    ['credentials smuggled before the host', () => `http://127.0.0.1:${api.port}@127.0.0.2:${api.port}/v1/sandbox/mcp`],
    ['a data: URL', () => 'data:application/json,{}'],
  ])('refuses %s before any connection', async (_, url) => {
    const apiFetch = apiFetchFor();
    await expect(apiFetch(url())).rejects.toMatchObject({ name: 'OutboundRequestError', code: 'DESTINATION_REFUSED' });
    await expect(apiFetch(url())).rejects.toBeInstanceOf(TypeError);
    expect({ api: api.connections, canary: canary.connections }).toEqual({ api: 0, canary: 0 });
  });

  it('refuses a Request aimed elsewhere', async () => {
    await expect(apiFetchFor()(new Request(`${canary.origin}/v1/sandbox/mcp`))).rejects.toBeInstanceOf(TypeError);
    expect(canary.connections).toBe(0);
  });

  it('refuses unanchored path patterns and non-origin origins when it is created', () => {
    expect(() => createApiFetch({ origin: api.origin, allowedPaths: [/\/v1\/sandbox\/mcp$/] })).toThrow(/anchored/);
    expect(() => createApiFetch({ origin: `${api.origin}/v1`, allowedPaths: [MCP_PATH] })).toThrow(TypeError);
  });

  it('refuses a redirect to an allowed path without following it', async () => {
    await expect(apiFetchFor()(mcpUrl('redirect-same'))).rejects.toMatchObject({ code: 'REDIRECT_REFUSED' });
    expect(api.requests).toEqual(['/v1/sandbox/mcp?case=redirect-same']);
  });

  it('refuses a redirect to another server without following it', async () => {
    const to = encodeURIComponent(`${canary.origin}/v1/sandbox/mcp`);
    await expect(apiFetchFor()(`${mcpUrl('redirect-external')}&to=${to}`)).rejects.toMatchObject({
      code: 'REDIRECT_REFUSED',
    });
    expect(canary.connections).toBe(0);
  });
});

describe('createApiFetch: bounds', () => {
  it('refuses a declared Content-Length over the limit and closes the connection', async () => {
    await expect(apiFetchFor()(mcpUrl('large-declared'))).rejects.toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
    await api.closedEarly('/v1/sandbox/mcp?case=large-declared');
  });

  it('errors a chunked body once it passes the limit, delivering no more than the limit', async () => {
    const response = await apiFetchFor()(mcpUrl('large-chunked'));
    const { bytes, error } = await readAll(response);
    expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
    expect(bytes).toBeLessThanOrEqual(MAX_API_RESPONSE_BYTES);
    await api.closedEarly('/v1/sandbox/mcp?case=large-chunked');
  });

  it('errors text() too, and a lower limit from the options', async () => {
    const response = await apiFetchFor({ maxResponseBytes: 64 * KiB })(mcpUrl('large-chunked'));
    await expect(response.text()).rejects.toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
  });

  it('bounds an SSE stream in total, however small its events', async () => {
    const response = await apiFetchFor({ maxResponseBytes: 16 * KiB })(mcpUrl('sse-endless'));
    const { bytes, error } = await readAll(response);
    expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
    expect(bytes).toBeLessThanOrEqual(16 * KiB);
    await api.closedEarly('/v1/sandbox/mcp?case=sse-endless');
  });

  it('times out a server that never answers in about timeoutMs', async () => {
    const started = performance.now();
    await expect(apiFetchFor({ timeoutMs: 300 })(mcpUrl('slow'))).rejects.toMatchObject({ name: 'TimeoutError' });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(1500);
    await api.closedEarly('/v1/sandbox/mcp?case=slow');
  });

  it('the deadline covers the body, not only the headers', async () => {
    const response = await apiFetchFor({ timeoutMs: 300 })(mcpUrl('slow-body'));
    await expect(response.text()).rejects.toMatchObject({ name: 'TimeoutError' });
    await api.closedEarly('/v1/sandbox/mcp?case=slow-body');
  });

  it('timeoutMs 0, negative or non-finite does not unbound it', async () => {
    for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, undefined, 10 * MAX_API_REQUEST_MS]) {
      expect(effectiveTimeout(value)).toBe(MAX_API_REQUEST_MS);
    }
    expect(effectiveTimeout(5000)).toBe(5000);
    // And the fetch built with timeoutMs: 0 arms that 120 s deadline on a real request.
    const timers = vi.spyOn(globalThis, 'setTimeout');
    const caller = new AbortController();
    const pending = apiFetchFor({ timeoutMs: 0 })(mcpUrl('slow'), { signal: caller.signal });
    expect(timers.mock.calls.map(([, delay]) => delay)).toContain(MAX_API_REQUEST_MS);
    caller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('a caller abort ends a waiting request promptly and closes the socket', async () => {
    const caller = new AbortController();
    const pending = apiFetchFor()(mcpUrl('slow'), { signal: caller.signal });
    await sleep(100);
    const aborted = performance.now();
    caller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - aborted).toBeLessThan(200);
    await api.closedEarly('/v1/sandbox/mcp?case=slow');
  });

  it('a caller abort also ends a body being read', async () => {
    const caller = new AbortController();
    const response = await apiFetchFor()(mcpUrl('slow-body'), { signal: caller.signal });
    const reading = response.text();
    caller.abort(new Error('the chat ended'));
    await expect(reading).rejects.toThrow('the chat ended');
    await api.closedEarly('/v1/sandbox/mcp?case=slow-body');
  });

  it('an already aborted signal sends nothing', async () => {
    await expect(apiFetchFor()(mcpUrl(), { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(api.connections).toBe(0);
  });
});

describe('createOriginFetch: the bounds of a chat stream', () => {
  const originFetchFor = (bounds: { maxResponseBytes: number; timeoutMs: number }) =>
    createOriginFetch({ origin: api.origin, allowedPaths: [MCP_PATH], ...bounds });

  it('uses exactly the bounds given, past the 1 MiB and 120 s of a sandbox call', async () => {
    const timers = vi.spyOn(globalThis, 'setTimeout');
    const response = await originFetchFor({
      maxResponseBytes: 8 * MAX_API_RESPONSE_BYTES,
      timeoutMs: 3 * MAX_API_REQUEST_MS,
    })(mcpUrl('large-chunked'));
    expect(timers.mock.calls.map(([, delay]) => delay)).toContain(3 * MAX_API_REQUEST_MS);
    const { bytes, error } = await readAll(response);
    expect(error).toBeUndefined();
    expect(bytes).toBe(4 * MAX_API_RESPONSE_BYTES);
  });

  it('still cuts a body off past the ceiling given, and keeps the destination checks', async () => {
    const originFetch = originFetchFor({ maxResponseBytes: 64 * KiB, timeoutMs: 5_000 });
    await expect((await originFetch(mcpUrl('large-chunked'))).text()).rejects.toMatchObject({
      code: 'RESPONSE_TOO_LARGE',
    });
    await expect(originFetch(`${api.origin}/v1/admin/tenants`)).rejects.toMatchObject({ code: 'DESTINATION_REFUSED' });
    await expect(originFetch(`${canary.origin}/v1/sandbox/mcp`)).rejects.toMatchObject({ code: 'DESTINATION_REFUSED' });
    expect(canary.connections).toBe(0);
  });

  it('refuses bounds that are not positive numbers, when it is created', () => {
    for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => originFetchFor({ maxResponseBytes: value, timeoutMs: 1_000 })).toThrow(/maxResponseBytes/);
      expect(() => originFetchFor({ maxResponseBytes: KiB, timeoutMs: value })).toThrow(/timeoutMs/);
    }
  });
});

/** A resolver that answers from a script, one answer per call (the last one repeats), and counts calls. */
function scriptedResolver(...answers: string[][]) {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length, answers.length) - 1] ?? [];
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

/** Only 127.0.0.2 counts as public, so a test can stand it in for an Internet host. */
const only127002IsPublic = (address: string) => address !== '127.0.0.2' && isForbiddenAddress(address);

/** A server on 127.0.0.2 and another on 127.0.0.1, on the same port. */
async function startTwinServers(): Promise<{ pinned: RecordingServer; loopback: RecordingServer }> {
  for (let attempt = 0; ; attempt += 1) {
    const pinned = await startServer('127.0.0.2');
    try {
      return { pinned, loopback: await startServer('127.0.0.1', pinned.port) };
    } catch (error) {
      await pinned.close();
      if (attempt === 10) throw error;
    }
  }
}

describe('createSsrfSafeFetch', () => {
  it('refuses a name resolving to a private address without connecting', async () => {
    const { resolve } = scriptedResolver(['127.0.0.1']);
    const safeFetch = createSsrfSafeFetch({ allowHttp: true, resolve });
    await expect(safeFetch(`http://mcp.example.test:${canary.port}/mcp`)).rejects.toMatchObject({
      code: 'DESTINATION_REFUSED',
    });
    expect(canary.connections).toBe(0);
  });

  it('refuses a name when any one of its addresses is private', async () => {
    const { resolve } = scriptedResolver(['93.184.215.14', '127.0.0.1']);
    const safeFetch = createSsrfSafeFetch({ allowHttp: true, resolve });
    await expect(safeFetch(`http://mcp.example.test:${canary.port}/mcp`)).rejects.toThrow(/127\.0\.0\.1/);
    await expect(safeFetch('https://mcp.example.test/mcp')).rejects.toBeInstanceOf(TypeError);
    expect(canary.connections).toBe(0);
  });

  it('connects to the address it checked, not to a later DNS answer (rebinding)', async () => {
    const { pinned, loopback } = await startTwinServers();
    try {
      const { resolve, calls } = scriptedResolver(['127.0.0.2'], ['127.0.0.1']);
      const safeFetch = createSsrfSafeFetch({ allowHttp: true, resolve, isForbidden: only127002IsPublic });
      const response = await safeFetch(`http://rebind.test:${pinned.port}/mcp`, { method: 'POST', body: 'hi' });
      expect(await response.json()).toMatchObject({ server: '127.0.0.2', body: 'hi' });
      expect(calls).toEqual(['rebind.test']);
      expect(pinned.requests).toEqual(['/mcp']);
      // The next request is checked afresh: now the name points at loopback and is refused.
      await expect(safeFetch(`http://rebind.test:${pinned.port}/mcp`)).rejects.toMatchObject({
        code: 'DESTINATION_REFUSED',
      });
      expect(loopback.connections).toBe(0);
    } finally {
      await pinned.close();
      await loopback.close();
    }
  });

  it('keeps the host name as the TLS server name while connecting to the pinned address', async () => {
    const serverNames: string[] = [];
    const arrivals: string[] = [];
    const server = tls.createServer({
      SNICallback: (name, callback) => {
        serverNames.push(name);
        callback(new Error('no certificate in this test'));
      },
    });
    server.on('connection', (socket) => arrivals.push(socket.localAddress ?? ''));
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const { resolve } = scriptedResolver(['127.0.0.2']);
      const safeFetch = createSsrfSafeFetch({ resolve, isForbidden: only127002IsPublic });
      await expect(safeFetch(`https://mcp.example.test:${port}/mcp`)).rejects.toThrow();
      expect(serverNames).toEqual(['mcp.example.test']);
      expect(arrivals).toEqual(['127.0.0.2']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.each([
    ['credentials in the URL', 'https://user:secret@mcp.example.test/mcp'],
    ['a user name alone', 'https://user@mcp.example.test/mcp'],
    ['plain http by default', 'http://mcp.example.test/mcp'],
    ['ftp', 'ftp://mcp.example.test/mcp'],
    ['file', 'file:///etc/passwd'],
    ['data', 'data:text/plain,hello'],
    ['loopback IPv4', 'https://127.0.0.1/mcp'],
    ['loopback IPv4 in integer form', 'https://2130706433/mcp'],
    ['loopback IPv4 in hex form', 'https://0x7f.0.0.1/mcp'],
    ['loopback IPv6', 'https://[::1]/mcp'],
    ['IPv4-mapped loopback', 'https://[::ffff:7f00:1]/mcp'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/'],
    ['a private address', 'https://10.0.0.1/mcp'],
    ['a ULA address', 'https://[fd00::1]/mcp'],
    ['the unspecified address', 'https://0.0.0.0/mcp'],
    ['metadata.google.internal', 'https://metadata.google.internal/computeMetadata/v1/'],
    ['localhost', 'https://localhost/mcp'],
    ['a .local name', 'https://printer.local/mcp'],
  ])('refuses %s without resolving or connecting', async (_, url) => {
    const { resolve, calls } = scriptedResolver(['93.184.215.14']);
    await expect(createSsrfSafeFetch({ resolve })(url)).rejects.toMatchObject({ code: 'DESTINATION_REFUSED' });
    expect(calls).toEqual([]);
  });

  it('refuses a literal loopback host even with allowHttp, without connecting', async () => {
    const safeFetch = createSsrfSafeFetch({ allowHttp: true });
    await expect(safeFetch(`${canary.origin}/mcp`)).rejects.toMatchObject({ code: 'DESTINATION_REFUSED' });
    expect(canary.connections).toBe(0);
  });

  it('refuses a redirect without following it', async () => {
    const { pinned, loopback } = await startTwinServers();
    try {
      const { resolve } = scriptedResolver(['127.0.0.2']);
      const safeFetch = createSsrfSafeFetch({ allowHttp: true, resolve, isForbidden: only127002IsPublic });
      await expect(
        safeFetch(`http://mcp.example.test:${pinned.port}/v1/sandbox/mcp?case=redirect-same`),
      ).rejects.toMatchObject({
        code: 'REDIRECT_REFUSED',
      });
      expect(pinned.requests).toEqual(['/v1/sandbox/mcp?case=redirect-same']);
    } finally {
      await pinned.close();
      await loopback.close();
    }
  });

  it('bounds the body and the time, DNS resolution included', async () => {
    const { pinned, loopback } = await startTwinServers();
    try {
      const { resolve } = scriptedResolver(['127.0.0.2']);
      const bounded = createSsrfSafeFetch({
        allowHttp: true,
        resolve,
        isForbidden: only127002IsPublic,
        maxResponseBytes: 32 * KiB,
        timeoutMs: 300,
      });
      const large = await bounded(`http://mcp.example.test:${pinned.port}/mcp?case=large-chunked`);
      await expect(large.arrayBuffer()).rejects.toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
      await pinned.closedEarly('/mcp?case=large-chunked');
      await expect(bounded(`http://mcp.example.test:${pinned.port}/mcp?case=slow`)).rejects.toMatchObject({
        name: 'TimeoutError',
      });
      const hangingDns = createSsrfSafeFetch({ allowHttp: true, resolve: () => new Promise(() => {}), timeoutMs: 200 });
      await expect(hangingDns('http://mcp.example.test/mcp')).rejects.toMatchObject({ name: 'TimeoutError' });
    } finally {
      await pinned.close();
      await loopback.close();
    }
  });
});
