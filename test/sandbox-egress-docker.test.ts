import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineApi } from '../src/sandbox/docker/engine-api.js';
import { networkConfig, runPython, testResolver } from './support/egress.js';
import { createAgentFixture } from './support/fixtures.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { buildWheel, type RecordingServer, startCanary, startPackageIndex } from './support/package-index.js';
import { startTestService, type TestService } from './support/service.js';

const SLOW = 180_000;
const DOCKER_SOCKET = '/var/run/docker.sock';
const IMAGE = process.env.MORDN_TEST_SANDBOX_IMAGE ?? 'mordn-sandbox:latest';
const api = createEngineApi(`unix://${DOCKER_SOCKET}`);

async function unavailable(runtime: 'runc' | 'runsc'): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'the Docker backend with workspace filesystems needs root';
  try {
    await api.call({ method: 'GET', path: '/_ping' });
    await api.call({ method: 'GET', path: `/images/${encodeURIComponent(IMAGE)}/json` });
    const { body } = await api.call<{ Runtimes?: Record<string, unknown> }>({ method: 'GET', path: '/info' });
    if (runtime === 'runsc' && !body?.Runtimes?.runsc) return 'the Docker daemon has no runsc runtime';
    return undefined;
  } catch (error) {
    return `Docker with image ${IMAGE}: ${String(error)}`;
  }
}

const runcMissing = await unavailable('runc');
if (runcMissing && process.env.MORDN_TEST_DOCKER === 'require')
  throw new Error(`MORDN_TEST_DOCKER=require, but ${runcMissing}`);
const runscMissing = process.env.MORDN_TEST_RUNSC ? await unavailable('runsc') : 'MORDN_TEST_RUNSC is not set';
if (runscMissing && process.env.MORDN_TEST_RUNSC === 'require')
  throw new Error(`MORDN_TEST_RUNSC=require, but ${runscMissing}`);

/**
 * A TCP front for the daemon's socket, as docker-compose.yml's socket proxy is: the service then
 * reaches the daemon over `tcp://`, and cannot bind-mount a socket of its own into a container.
 */
async function startSocketProxy(): Promise<{ host: string; close(): Promise<void> }> {
  const server: Server = createServer((client) => {
    const daemon = createConnection(DOCKER_SOCKET);
    client.pipe(daemon).pipe(client);
    const close = () => {
      client.destroy();
      daemon.destroy();
    };
    client.once('error', close);
    daemon.once('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `tcp://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe.each([
  ['runc, behind a TCP socket proxy', 'runc' as const, runcMissing],
  ['gVisor (runsc)', 'runsc' as const, runscMissing],
])('sandbox egress on the Docker backend: %s', (_name, runtime, missing) => {
  let service: TestService;
  let index: Awaited<ReturnType<typeof startPackageIndex>>;
  let canary: RecordingServer;
  let socketProxy: Awaited<ReturnType<typeof startSocketProxy>> | undefined;

  beforeAll(async () => {
    if (missing) return;
    index = await startPackageIndex([await buildWheel('mordndocker', '2.0', `installed under ${runtime}`)]);
    canary = await startCanary();
    socketProxy = runtime === 'runc' ? await startSocketProxy() : undefined;
    service = await startTestService({
      resolve: testResolver({ 'index.egress.test': ['127.0.0.1'], 'canary.egress.test': ['127.0.0.1'] }),
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_BACKEND: 'docker',
        MORDN_SANDBOX_IMAGE: IMAGE,
        MORDN_SANDBOX_RUNTIME: runtime,
        ...(socketProxy ? { MORDN_DOCKER_HOST: socketProxy.host } : {}),
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://index.egress.test:${index.port}/simple/`,
        MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: '',
        MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32',
        MORDN_SANDBOX_EGRESS_PORTS: `80,443,${index.port},${canary.port}`,
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      },
    });
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    await index?.close();
    await canary?.close();
    await socketProxy?.close();
  });

  it.skipIf(missing !== undefined)(
    'pip installs from the operator index into the workspace volume, and nothing else is reached',
    async () => {
      const fixture = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'packages' }) });
      const client = await connectSdkClient(service, fixture.key, `docker-${runtime}`);
      try {
        const install = await callTool(client, 'sandbox_exec', {
          command: 'python3 -m pip install mordndocker 2>&1',
          timeoutSeconds: 120,
        });
        expect(install.value, JSON.stringify(install.value)).toMatchObject({ exitCode: 0 });
        const imported = await callTool(client, 'sandbox_exec', {
          command: 'python3 -c "import mordndocker; print(mordndocker.VALUE)"',
        });
        expect(imported.value.stdout).toBe(`installed under ${runtime}\n`);
        const refused = await runPython(
          client,
          `import socket, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://canary.egress.test:${canary.port}/", timeout=10)
except urllib.error.HTTPError as error:
    print(error.code)
for address in ("127.0.0.1", "172.17.0.1", "1.1.1.1"):
    try:
        socket.create_connection((address, ${canary.port}), timeout=3)
        print("connected", address)
    except OSError as error:
        print("refused", address)`,
        );
        expect(refused.stdout).toBe('403\nrefused 127.0.0.1\nrefused 172.17.0.1\nrefused 1.1.1.1\n');
        expect(canary.requests).toEqual([]);
      } finally {
        await client.close();
      }
    },
    SLOW,
  );
});
