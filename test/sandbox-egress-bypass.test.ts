import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { networkConfig, RAW_PROXY_PY, runPython, testResolver } from './support/egress.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { connectSdkClient } from './support/mcp.js';
import { type RecordingServer, startCanary, startRecordingServer } from './support/package-index.js';
import { startTestService, type TestService } from './support/service.js';

const isRoot = process.getuid?.() === 0;
const SLOW = 120_000;

/** Addresses this host is reachable on from elsewhere (not loopback): a sandbox must reach none. */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((entry) => entry && !entry.internal && entry.family === 'IPv4')
    .map((entry) => (entry as { address: string }).address);
}

/** The resolvers the host itself uses: a sandbox must not be able to ask them anything. */
function hostResolvers(): string[] {
  try {
    return [...readFileSync('/etc/resolv.conf', 'utf8').matchAll(/^nameserver\s+(\S+)/gm)].map(
      (match) => match[1] as string,
    );
  } catch {
    return [];
  }
}

/**
 * Everything sandboxed code could try to get past the policy: going around the proxy, and
 * talking to it in ways meant to confuse it. Each case proves the canaries saw nothing.
 */
describe.skipIf(!isRoot)('sandbox egress: what sandboxed code does to get around the policy (bwrap)', () => {
  let service: TestService;
  let allowed: RecordingServer;
  /** On the same port as `allowed`, but on 127.0.0.2: reached only by a second lookup. */
  let twin: RecordingServer & { connections: string[] };
  /** On every address of this host: reached only by going around the proxy. */
  let canary: RecordingServer & { connections: string[] };
  /** On 127.0.0.3, outside the private CIDRs: reached only if a refused range slipped through. */
  let privateCanary: RecordingServer & { connections: string[] };
  let fixture: AgentFixture;
  let client: Client;
  let flips = 0;
  let resolver: ReturnType<typeof testResolver>;

  beforeAll(async () => {
    allowed = await startRecordingServer({ host: '127.0.0.1', body: 'allowed' });
    twin = await startRecordingServer({ host: '127.0.0.2', port: allowed.port, body: 'twin' });
    canary = await startCanary({ host: '0.0.0.0' });
    privateCanary = await startCanary({ host: '127.0.0.3', port: allowed.port });
    resolver = testResolver({
      'allowed.egress.test': ['127.0.0.1'],
      // Rebinding: a public-looking answer first, a refused one after it.
      'rebind.egress.test': ['127.0.0.1', '10.0.0.1'],
      'metadata.egress.test': ['169.254.169.254'],
      'private.egress.test': ['127.0.0.3'],
      'mapped.egress.test': ['::ffff:127.0.0.3'],
      // Rebinding between lookups: the first answer is checked, a later one would differ.
      'flip.egress.test': () => (flips++ === 0 ? ['127.0.0.1'] : ['127.0.0.2']),
    });
    service = await startTestService({
      resolve: resolver,
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://allowed.egress.test:${allowed.port}/simple/`,
        MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: '',
        MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32,127.0.0.2/32',
        MORDN_SANDBOX_EGRESS_PORTS: `80,443,${allowed.port}`,
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      },
    });
    fixture = await createAgentFixture(service.database.db, {
      published: networkConfig({
        mode: 'allowlist',
        allow: [
          'allowed.egress.test',
          'rebind.egress.test',
          'metadata.egress.test',
          'private.egress.test',
          'mapped.egress.test',
          'flip.egress.test',
          `127.0.0.3:${allowed.port}`,
          '169.254.169.254',
        ],
      }),
    });
    client = await connectSdkClient(service, fixture.key, 'mallory');
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await service?.close();
    await Promise.all([allowed?.close(), twin?.close(), canary?.close(), privateCanary?.close()]);
  });

  const untouched = () => {
    expect(canary.connections).toEqual([]);
    expect(privateCanary.connections).toEqual([]);
    expect(twin.connections).toEqual([]);
  };

  it(
    'going around the proxy reaches nothing: raw sockets to the host, DNS over UDP and TCP, clients that ignore the variables',
    async () => {
      const targets = [...hostAddresses(), '1.1.1.1', '8.8.8.8'];
      const resolvers = [...hostResolvers(), '8.8.8.8', '1.1.1.1'];
      const result = await runPython(
        client,
        `import socket, urllib.request
def outcome(action):
    try:
        action()
        return "connected"
    except OSError as error:
        return type(error).__name__
results = {}
for address in ${JSON.stringify(targets)}:
    results["tcp " + address] = outcome(lambda: socket.create_connection((address, ${canary.port}), timeout=3))
query = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01"
for resolver in ${JSON.stringify(resolvers)}:
    def udp():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(query, (resolver, 53))
        s.recvfrom(512)
    results["udp dns " + resolver] = outcome(udp)
    results["tcp dns " + resolver] = outcome(lambda: socket.create_connection((resolver, 53), timeout=3))
results["getaddrinfo"] = outcome(lambda: socket.getaddrinfo("allowed.egress.test", 80))
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
results["urllib without proxy"] = outcome(lambda: direct.open("http://allowed.egress.test:${allowed.port}/", timeout=3))
results["no proxy for 127.0.0.1"] = outcome(lambda: urllib.request.urlopen("http://127.0.0.1:${allowed.port}/", timeout=3))
for name, value in sorted(results.items()):
    print(name, value)`,
      );
      expect(result.exitCode, result.stderr).toBe(0);
      const lines = result.stdout.trim().split('\n');
      expect(lines.length).toBe(targets.length + resolvers.length * 2 + 3);
      for (const line of lines) expect(line, line).not.toMatch(/ connected$/);
      untouched();
      expect(allowed.requests).toEqual([]);
    },
    SLOW,
  );

  it(
    'CONNECT to an unlisted IP literal, or to any spelling of one, is refused before anything is resolved',
    async () => {
      const spellings = [
        `127.0.0.1:${canary.port}`,
        `2130706433:${canary.port}`,
        `0x7f000001:${canary.port}`,
        `0177.0.0.1:${canary.port}`,
        `0x7f.0.0.1:${canary.port}`,
        `127.1:${canary.port}`,
        `[::1]:${canary.port}`,
        `[::ffff:127.0.0.1]:${canary.port}`,
        `${'a'.repeat(300)}.egress.test:${allowed.port}`,
        `allowed.egress.test:${canary.port}`,
        `allowed.egress.test`,
        `allowed_egress.test:${allowed.port}`,
      ];
      const result = await runPython(
        client,
        `${RAW_PROXY_PY}
for target in ${JSON.stringify(spellings)}:
    print(status("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (target, target)))`,
      );
      const statuses = result.stdout.trim().split('\n');
      expect(statuses).toHaveLength(spellings.length);
      for (const status of statuses)
        expect(status).toMatch(/^HTTP\/1\.1 403 Forbidden by the workspace network policy: /);
      untouched();
      const reasons = await service.database.db
        .selectFrom('egress_log')
        .select(['host', 'reason', 'address'])
        .where('decision', '=', 'refused')
        .execute();
      expect(reasons.find((row) => row.host === 'allowed.egress.test' && row.reason === 'port')).toBeDefined();
      expect(reasons.every((row) => row.address === null)).toBe(true);
    },
    SLOW,
  );

  it(
    'an allowed name that resolves into a refused range is refused, whichever answer it is; so is a listed literal in one',
    async () => {
      const targets = [
        `rebind.egress.test:${allowed.port}`,
        `metadata.egress.test:80`,
        `private.egress.test:${allowed.port}`,
        `mapped.egress.test:${allowed.port}`,
        `127.0.0.3:${allowed.port}`,
        '169.254.169.254:80',
      ];
      const result = await runPython(
        client,
        `${RAW_PROXY_PY}
for target in ${JSON.stringify(targets)}:
    print(status("CONNECT %s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" % target))`,
      );
      expect(result.stdout.trim().split('\n')).toEqual(
        targets.map((target) => `HTTP/1.1 403 Forbidden by the workspace network policy: ${target}`),
      );
      untouched();
      const rows = await service.database.db
        .selectFrom('egress_log')
        .select(['host', 'reason', 'address'])
        .where('reason', '=', 'private_address')
        .execute();
      expect(rows).toEqual(
        expect.arrayContaining([
          { host: 'rebind.egress.test', reason: 'private_address', address: '10.0.0.1' },
          { host: 'metadata.egress.test', reason: 'private_address', address: '169.254.169.254' },
          { host: 'private.egress.test', reason: 'private_address', address: '127.0.0.3' },
          { host: 'mapped.egress.test', reason: 'private_address', address: '::ffff:127.0.0.3' },
          { host: '127.0.0.3', reason: 'private_address', address: '127.0.0.3' },
          { host: '169.254.169.254', reason: 'private_address', address: '169.254.169.254' },
        ]),
      );
    },
    SLOW,
  );

  it(
    'connects to the address it checked: a name that answers differently later is never looked up again',
    async () => {
      const result = await runPython(
        client,
        `${RAW_PROXY_PY}
import socket
s = socket.create_connection(("127.0.0.1", proxy_port()), timeout=10)
s.sendall(b"CONNECT flip.egress.test:${allowed.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
head = b""
while b"\\r\\n\\r\\n" not in head:
    head += s.recv(1)
s.sendall(b"GET /which HTTP/1.1\\r\\nHost: flip.egress.test\\r\\nConnection: close\\r\\n\\r\\n")
body = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    body += chunk
print(head.split(b"\\r\\n", 1)[0].decode(), b"\\r\\nallowed\\r\\n" in body, b"twin" in body)`,
      );
      // One lookup, whose answer (127.0.0.1) was checked and connected to; a second lookup would
      // have answered 127.0.0.2, where the twin listens on the same port.
      expect(result.stdout).toBe('HTTP/1.1 200 Connection Established True False\n');
      expect(resolver.lookups.filter((name) => name === 'flip.egress.test')).toEqual(['flip.egress.test']);
      untouched();
    },
    SLOW,
  );

  it(
    'absolute-form requests reach only the host in the request target, whatever Host, userinfo or scheme they carry',
    async () => {
      const requests = [
        // A Host header naming the canary: the request target decides, and Host is rewritten.
        `GET http://allowed.egress.test:${allowed.port}/by-target HTTP/1.1\r\nHost: canary.egress.test:${canary.port}\r\nConnection: close\r\n\r\n`,
        // Userinfo that looks like the allowed host: the host is the canary's.
        `GET http://allowed.egress.test:${allowed.port}@canary.egress.test:${canary.port}/ HTTP/1.1\r\nHost: allowed.egress.test\r\n\r\n`,
        // Origin-form, as if the proxy were the allowed server.
        `GET /origin-form HTTP/1.1\r\nHost: allowed.egress.test:${allowed.port}\r\n\r\n`,
        // An https:// target belongs to CONNECT.
        `GET https://allowed.egress.test:${allowed.port}/ HTTP/1.1\r\nHost: allowed.egress.test\r\n\r\n`,
        // Another scheme.
        `GET ftp://allowed.egress.test:${allowed.port}/ HTTP/1.1\r\nHost: allowed.egress.test\r\n\r\n`,
        // A request line that is not HTTP.
        'HELLO allowed.egress.test\r\n\r\n',
      ];
      const result = await runPython(
        client,
        `${RAW_PROXY_PY}
import json
for request in json.loads(${JSON.stringify(JSON.stringify(requests))}):
    print(status(request))`,
      );
      expect(result.stdout.trim().split('\n')).toEqual([
        'HTTP/1.1 200 OK',
        `HTTP/1.1 403 Forbidden by the workspace network policy: canary.egress.test:${canary.port}`,
        `HTTP/1.1 403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}`,
        `HTTP/1.1 403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}`,
        `HTTP/1.1 403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}`,
        'HTTP/1.1 400 Bad Request',
      ]);
      expect(allowed.requests.filter((request) => request.path !== '/which')).toEqual([
        { method: 'GET', path: '/by-target', host: `allowed.egress.test:${allowed.port}` },
      ]);
      untouched();
      const methodRefusals = await service.database.db
        .selectFrom('egress_log')
        .select('reason')
        .where('reason', '=', 'method')
        .execute();
      expect(methodRefusals.length).toBeGreaterThanOrEqual(3);
    },
    SLOW,
  );
});
