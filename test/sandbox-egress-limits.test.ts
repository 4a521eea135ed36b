import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { networkConfig, RAW_PROXY_PY, runPython, testResolver } from './support/egress.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { type RecordingServer, startRecordingServer } from './support/package-index.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';

const isRoot = process.getuid?.() === 0;
const SLOW = 120_000;
const MiB = 1024 * 1024;

/** Python that downloads `bytes` through the proxy and prints how many arrived and in how long. */
function download(port: number, bytes: number): string {
  return `import time, urllib.request
started = time.monotonic()
received = 0
try:
    with urllib.request.urlopen("http://allowed.egress.test:${port}/?bytes=${bytes}", timeout=60) as answer:
        while True:
            chunk = answer.read(65536)
            if not chunk:
                break
            received += len(chunk)
except Exception as error:
    print("cut", type(error).__name__)
print(received, round(time.monotonic() - started, 2))`;
}

describe.skipIf(!isRoot)('sandbox egress limits and fairness (bwrap)', () => {
  let service: TestService;
  let allowed: RecordingServer;
  let model: ScriptedModelServer;
  let fixture: AgentFixture;
  const clients: Client[] = [];
  const client = async (user: string) => {
    const connected = await connectSdkClient(service, fixture.key, user);
    clients.push(connected);
    return connected;
  };

  beforeAll(async () => {
    allowed = await startRecordingServer({ body: 'allowed' });
    model = await startScriptedModelServer(() => ({ text: ['Still ', 'answering.'] }));
    service = await startTestService({
      resolve: testResolver({ 'allowed.egress.test': ['127.0.0.1'] }),
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://allowed.egress.test:${allowed.port}/simple/`,
        MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32',
        MORDN_SANDBOX_EGRESS_PORTS: `${allowed.port}`,
        MORDN_SANDBOX_EGRESS_MAX_CONNECTIONS: '16',
        // Slow enough that a transfer lasts while other work is watched.
        MORDN_SANDBOX_EGRESS_BYTES_PER_SECOND: String(MiB),
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
        MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '4',
        MORDN_MODEL: 'openai-compatible:scripted-1',
        MORDN_MODEL_BASE_URL: model.baseUrl,
      },
    });
    fixture = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'packages' }) });
  }, 60_000);
  afterAll(async () => {
    for (const connected of clients) await connected.close().catch(() => undefined);
    await service?.close();
    await allowed?.close();
    await model?.close();
  });

  /** A chat turn through the service's own API, read to its end. */
  const chatTurn = async () => {
    const response = await service.fetch('/v1/chat', {
      method: 'POST',
      headers: { ...agentHeaders(fixture.key, 'chatter'), 'Content-Type': 'application/json' },
      body: JSON.stringify(chatBody(`chat-${Math.random().toString(36).slice(2)}`, 'hello')),
    });
    const chunks = await readUiChunks(response);
    return chunks
      .filter((chunk) => chunk.type === 'text-delta')
      .map((chunk) => (chunk as { delta: string }).delta)
      .join('');
  };

  it(
    'a workspace opening 200 connections gets at most its cap, while another workspace and a chat stream go through',
    async () => {
      const greedy = await client('greedy');
      const other = await client('other');
      // 200 connections held open at once; each asks for the allowed host.
      const flood = runPython(
        greedy,
        `${RAW_PROXY_PY}
import socket, time
held, answers = [], []
for _ in range(200):
    s = socket.create_connection(("127.0.0.1", proxy_port()), timeout=10)
    s.sendall(b"CONNECT allowed.egress.test:${allowed.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    held.append(s)
for s in held:
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    answers.append(head.split(b"\\r\\n", 1)[0].decode())
open("flood-done", "w").write("")
time.sleep(3)
print(sum(a.startswith("HTTP/1.1 200") for a in answers), sum(a.startswith("HTTP/1.1 403") for a in answers))`,
      );
      // While it holds its connections: another workspace's request, and a chat answer.
      const [otherResult, answer] = await Promise.all([
        (async () => {
          for (let waited = 0; waited < 30_000; waited += 100) {
            const done = await callTool(greedy, 'sandbox_exec', { command: 'test -e flood-done && echo yes || true' });
            if (done.value.stdout === 'yes\n') break;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          return runPython(
            other,
            `import urllib.request
print(urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/other", timeout=10).read().decode())`,
          );
        })(),
        chatTurn(),
      ]);
      expect(otherResult.stdout).toBe('allowed\n');
      expect(answer).toBe('Still answering.');
      const [ok, refused] = (await flood).stdout.trim().split(' ').map(Number);
      expect(ok).toBe(16);
      expect(refused).toBe(184);
      const limitRows = await service.database.db
        .selectFrom('egress_log')
        .select(['count'])
        .where('user_id', '=', 'greedy')
        .where('reason', '=', 'limit')
        .execute();
      expect(limitRows.reduce((sum, row) => sum + Number(row.count), 0)).toBe(184);
    },
    SLOW,
  );

  it(
    "one workspace's download is paced at its bandwidth; another workspace and a chat finish while it runs",
    async () => {
      const big = await client('big');
      const small = await client('small');
      let bigDone = 0;
      const transfer = runPython(big, download(allowed.port, 6 * MiB)).then((result) => {
        bigDone = performance.now();
        return result;
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const smallResult = await runPython(small, download(allowed.port, 64 * 1024));
      const smallDone = performance.now();
      const answer = await chatTurn();
      const chatDone = performance.now();
      const bigResult = await transfer;
      expect(smallResult.stdout).toMatch(/^65536 /);
      expect(answer).toBe('Still answering.');
      expect(smallDone).toBeLessThan(bigDone);
      expect(chatDone).toBeLessThan(bigDone);
      const [received, seconds] = bigResult.stdout.trim().split(' ').map(Number);
      expect(received).toBe(6 * MiB);
      // At 1 MiB/s (and a tenth of a second's burst), 6 MiB cannot take much less than 6 s.
      expect(seconds).toBeGreaterThanOrEqual(5);
    },
    SLOW,
  );
});

describe.skipIf(!isRoot)('sandbox egress daily bytes and idle connections (bwrap)', () => {
  let service: TestService;
  let allowed: RecordingServer;
  let fixture: AgentFixture;
  let client: Client;

  beforeAll(async () => {
    allowed = await startRecordingServer({ body: 'allowed' });
    service = await startTestService({
      resolve: testResolver({ 'allowed.egress.test': ['127.0.0.1'] }),
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://allowed.egress.test:${allowed.port}/simple/`,
        MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32',
        MORDN_SANDBOX_EGRESS_PORTS: `${allowed.port}`,
        MORDN_SANDBOX_EGRESS_BYTES_PER_DAY: String(MiB),
        MORDN_SANDBOX_EGRESS_BYTES_PER_SECOND: String(MiB),
        MORDN_SANDBOX_EGRESS_IDLE_SECONDS: '1',
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      },
    });
    fixture = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'packages' }) });
    client = await connectSdkClient(service, fixture.key, 'thrifty');
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await service?.close();
    await allowed?.close();
  });

  it(
    'closes an idle connection after MORDN_SANDBOX_EGRESS_IDLE_SECONDS',
    async () => {
      const result = await runPython(
        client,
        `${RAW_PROXY_PY}
import socket, time
s = socket.create_connection(("127.0.0.1", proxy_port()), timeout=10)
s.sendall(b"CONNECT allowed.egress.test:${allowed.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
head = b""
while b"\\r\\n\\r\\n" not in head:
    head += s.recv(1)
started = time.monotonic()
s.settimeout(8)
print(head.split(b"\\r\\n", 1)[0].decode(), repr(s.recv(10)), time.monotonic() - started < 6)`,
      );
      expect(result.stdout).toBe("HTTP/1.1 200 Connection Established b'' True\n");
    },
    SLOW,
  );

  it(
    'past the daily bytes, an open connection is closed and the next is refused (limit), counted in the database',
    async () => {
      const first = await runPython(client, download(allowed.port, 4 * MiB));
      const [received] = first.stdout.trim().split('\n').at(-1)?.split(' ').map(Number) ?? [];
      expect(received).toBeLessThan(4 * MiB);
      const next = await runPython(
        client,
        `import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/after", timeout=10)
except urllib.error.HTTPError as error:
    print(error.code, error.read().decode().strip())`,
      );
      expect(next.stdout).toBe(
        `403 allowed.egress.test:${allowed.port} was refused by the workspace's network policy: the workspace's network limit is reached.\n`,
      );
      expect(next.message).toContain('EGRESS_REFUSED');
      const usage = await service.database.db.selectFrom('egress_usage').selectAll().execute();
      expect(usage).toHaveLength(1);
      expect(Number(usage[0]?.bytes)).toBeGreaterThanOrEqual(MiB);
      const status = await service.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key, 'thrifty') });
      expect(await readJson(status)).toEqual({ enabled: true, available: true });
    },
    SLOW,
  );
});
