import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishConfig, saveDraftConfig } from '../src/agents/agent-configs.js';
import { networkConfig, RAW_PROXY_PY, runPython, testResolver } from './support/egress.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import {
  buildWheel,
  type RecordingServer,
  startCanary,
  startPackageIndex,
  startRecordingServer,
} from './support/package-index.js';
import { agentHeaders, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';

const isRoot = process.getuid?.() === 0;
const SLOW = 120_000;

/**
 * Egress through the policy proxy with real bubblewrap sandboxes, a real pip and real servers on
 * this machine. Names resolve through the proxy's resolver, which the test maps to loopback
 * addresses of its own servers (the sandbox itself resolves nothing and has no route out).
 */
describe.skipIf(!isRoot)('sandbox egress through the policy proxy (bwrap)', () => {
  let service: TestService;
  let index: Awaited<ReturnType<typeof startPackageIndex>>;
  let allowed: RecordingServer;
  let canary: RecordingServer;
  let packagesAgent: AgentFixture;
  let allowlistAgent: AgentFixture;
  let noneAgent: AgentFixture;
  const clients: Client[] = [];
  const client = async (fixture: AgentFixture, user: string) => {
    const connected = await connectSdkClient(service, fixture.key, user);
    clients.push(connected);
    return connected;
  };

  beforeAll(async () => {
    index = await startPackageIndex([await buildWheel('mordntiny', '1.0', 'from the index')]);
    allowed = await startRecordingServer({ body: 'allowed' });
    canary = await startCanary();
    service = await startTestService({
      resolve: testResolver({
        'index.egress.test': ['127.0.0.1'],
        'allowed.egress.test': ['127.0.0.1'],
        'canary.egress.test': ['127.0.0.1'],
      }),
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://index.egress.test:${index.port}/simple/`,
        MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: '',
        MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32',
        // The canary's port is deliberately not one of them.
        MORDN_SANDBOX_EGRESS_PORTS: `80,443,${index.port},${allowed.port}`,
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      },
    });
    packagesAgent = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'packages' }) });
    allowlistAgent = await createAgentFixture(service.database.db, {
      published: networkConfig({ mode: 'allowlist', allow: ['allowed.egress.test'] }),
    });
    noneAgent = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'none' }) });
  }, 60_000);
  afterAll(async () => {
    for (const connected of clients) await connected.close().catch(() => undefined);
    await service?.close();
    await Promise.all([index?.close(), allowed?.close(), canary?.close()]);
  });

  it(
    'packages: pip installs a real wheel from the operator index into the workspace, and it imports in a later call',
    async () => {
      const alice = await client(packagesAgent, 'alice');
      const install = await callTool(alice, 'sandbox_exec', {
        command: 'pip install mordntiny 2>&1',
        timeoutSeconds: 120,
      });
      expect(install.value, JSON.stringify(install.value)).toMatchObject({ exitCode: 0 });
      expect(install.value.stdout).toContain('Successfully installed mordntiny-1.0');
      expect(index.requests.map((request) => request.path)).toEqual(
        expect.arrayContaining(['/simple/mordntiny/', '/files/mordntiny-1.0-py3-none-any.whl']),
      );
      // The index saw the host as the client named it, never an address of the sandbox's choosing.
      expect(index.requests.every((request) => request.host === `index.egress.test:${index.port}`)).toBe(true);
      const imported = await callTool(alice, 'sandbox_exec', {
        command: 'python3 -c "import mordntiny; print(mordntiny.VALUE)"; ls .local/lib',
      });
      expect(imported.value.stdout).toMatch(/^from the index\npython3\.\d+\n$/);
    },
    SLOW,
  );

  it(
    'packages: every other host is refused with the proxy 403 naming the host, the canary never hit, and the result says so',
    async () => {
      const bob = await client(packagesAgent, 'bob');
      const result = await runPython(
        bob,
        `import urllib.request, urllib.error
try:
    urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/x", timeout=10)
    print("reached")
except urllib.error.HTTPError as error:
    print(error.code, error.reason)
    print(error.read().decode().strip())`,
      );
      expect(result.stdout).toBe(
        `403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}\n` +
          `allowed.egress.test:${allowed.port} was refused by the workspace's network policy: the host is not one the policy allows.\n`,
      );
      expect(result.message).toBe(
        `EGRESS_REFUSED: allowed.egress.test:${allowed.port} was refused by the workspace's network policy: the host is not one the policy allows.`,
      );
      expect(allowed.requests).toEqual([]);
    },
    SLOW,
  );

  it(
    'allowlist: the listed host answers through the proxy, another host and another port are refused',
    async () => {
      const carol = await client(allowlistAgent, 'carol');
      const result = await runPython(
        carol,
        `import urllib.request, urllib.error
def get(url):
    try:
        return urllib.request.urlopen(url, timeout=10).read().decode()
    except urllib.error.HTTPError as error:
        return "%d %s" % (error.code, error.reason)
print(get("http://allowed.egress.test:${allowed.port}/hello"))
print(get("http://canary.egress.test:${canary.port}/"))
print(get("http://allowed.egress.test:${canary.port}/"))`,
      );
      expect(result.stdout).toBe(
        'allowed\n' +
          `403 Forbidden by the workspace network policy: canary.egress.test:${canary.port}\n` +
          `403 Forbidden by the workspace network policy: allowed.egress.test:${canary.port}\n`,
      );
      expect(allowed.requests).toEqual([
        { method: 'GET', path: '/hello', host: `allowed.egress.test:${allowed.port}` },
      ]);
      expect(canary.requests).toEqual([]);
    },
    SLOW,
  );

  it(
    'none: a command gets no proxy variable, and the way out refuses whatever a program finds of it',
    async () => {
      const dave = await client(noneAgent, 'dave');
      const result = await runPython(
        dave,
        `import os
print(sorted(name for name in os.environ if "proxy" in name.lower() or name.startswith("PIP_")))
${RAW_PROXY_PY}
print(status("CONNECT allowed.egress.test:${allowed.port} HTTP/1.1\\r\\nHost: allowed.egress.test\\r\\n\\r\\n"))`,
      );
      expect(result.stdout).toBe(
        `[]\nHTTP/1.1 403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}\n`,
      );
      expect(allowed.requests.filter((request) => request.path !== '/hello')).toEqual([]);
    },
    SLOW,
  );

  it(
    'a publish that narrows the policy refuses the next connection, without a restart',
    async () => {
      const narrowing = await createAgentFixture(service.database.db, {
        published: networkConfig({ mode: 'allowlist', allow: ['allowed.egress.test'] }),
      });
      const erin = await client(narrowing, 'erin');
      const fetch = `import urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/narrow", timeout=10).read().decode())
except urllib.error.HTTPError as error:
    print(error.code)`;
      expect((await runPython(erin, fetch)).stdout).toBe('allowed\n');
      await saveDraftConfig(service.database.db, narrowing.agentId, networkConfig({ mode: 'packages' }));
      // A draft opens and closes nothing: only the published policy counts.
      expect((await runPython(erin, fetch)).stdout).toBe('allowed\n');
      await publishConfig(service.database.db, narrowing.agentId);
      expect((await runPython(erin, fetch)).stdout).toBe('403\n');
    },
    SLOW,
  );

  it(
    'records every decision: the admin route lists them newest first, refusals in a loop collapse into one counted row',
    async () => {
      const frank = await client(allowlistAgent, 'frank');
      await runPython(
        frank,
        `import urllib.request, urllib.error
urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/logged", timeout=10).read()
for _ in range(20):
    try:
        urllib.request.urlopen("http://canary.egress.test:${canary.port}/", timeout=10)
    except urllib.error.HTTPError:
        pass`,
      );
      const response = await service.fetch(`/v1/admin/tenants/${allowlistAgent.tenantId}/egress?limit=100`, {
        headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      expect(response.status).toBe(200);
      const page = (await readJson(response)) as { items: Array<Record<string, unknown>>; nextCursor: string | null };
      const franks = page.items.filter((item) => item.userId === 'frank');
      expect(franks).toEqual([
        expect.objectContaining({
          agentId: allowlistAgent.agentId,
          host: 'canary.egress.test',
          port: canary.port,
          address: null,
          decision: 'refused',
          reason: 'policy',
          bytesUp: 0,
          bytesDown: 0,
          count: 20,
        }),
        expect.objectContaining({
          host: 'allowed.egress.test',
          port: allowed.port,
          address: '127.0.0.1',
          decision: 'allowed',
          reason: null,
          count: 1,
        }),
      ]);
      expect((franks[1] as { bytesDown: number }).bytesDown).toBeGreaterThan(0);
      expect(Date.parse(franks[0]?.at as string)).toBeGreaterThanOrEqual(Date.parse(franks[1]?.at as string));
      // Another tenant's log is its own, and a missing tenant is a 404.
      const other = await service.fetch(`/v1/admin/tenants/${packagesAgent.tenantId}/egress`, {
        headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      const otherPage = (await readJson(other)) as { items: Array<{ userId: string }> };
      expect(otherPage.items.some((item) => item.userId === 'frank')).toBe(false);
      const missing = await service.fetch('/v1/admin/tenants/ten_000000000000000000000000/egress', {
        headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      expect(missing.status).toBe(404);
      // /metrics counts decisions by decision and reason only.
      const metrics = await (await service.fetch('/metrics')).text();
      expect(metrics).toMatch(/^mordn_sandbox_egress_total\{decision="refused",reason="policy"\} \d+$/m);
      expect(metrics).toMatch(/^mordn_sandbox_egress_total\{decision="allowed",reason="none"\} \d+$/m);
      expect(metrics).not.toContain(allowlistAgent.tenantId);
    },
    SLOW,
  );

  it(
    "a user's erasure counts their egress decisions in the dry run and removes them",
    async () => {
      const gina = await client(allowlistAgent, 'gina');
      await runPython(
        gina,
        `import urllib.request
urllib.request.urlopen("http://allowed.egress.test:${allowed.port}/erase-me", timeout=10).read()`,
      );
      const erase = (dryRun: boolean) =>
        service.fetch(`/v1/admin/agents/${allowlistAgent.agentId}/users/gina/erase`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ dryRun }),
        });
      const dry = (await readJson(await erase(true))) as { counts: { egressDecisions: number } };
      expect(dry.counts.egressDecisions).toBeGreaterThanOrEqual(1);
      const done = (await readJson(await erase(false))) as { counts: { egressDecisions: number }; status: string };
      expect(done).toMatchObject({ status: 'complete', counts: { egressDecisions: dry.counts.egressDecisions } });
      const left = await service.database.db
        .selectFrom('egress_log')
        .select('id')
        .where('agent_id', '=', allowlistAgent.agentId)
        .where('user_id', '=', 'gina')
        .execute();
      expect(left).toEqual([]);
    },
    SLOW,
  );

  it('tells the model what the network reaches in tools/list, open-world only when it reaches something', async () => {
    const listing = async (fixture: AgentFixture) => {
      const listed = await (await client(fixture, 'lister')).listTools();
      return listed.tools.find((tool) => tool.name === 'sandbox_exec') as {
        description: string;
        annotations: { openWorldHint: boolean };
      };
    };
    const none = await listing(noneAgent);
    expect(none.description).toContain('There is no network: every connection out of the workspace fails.');
    expect(none.annotations.openWorldHint).toBe(false);
    const packages = await listing(packagesAgent);
    expect(packages.description).toContain('Network: only the package index');
    expect(packages.annotations.openWorldHint).toBe(true);
    const allowlist = await listing(allowlistAgent);
    expect(allowlist.description).toContain(
      "Network: only these hosts, through the workspace's proxy: allowed.egress.test; and pip installs",
    );
    expect(allowlist.annotations.openWorldHint).toBe(true);
    // Listing provisions nothing.
    const workspaces = await service.database.db.selectFrom('workspaces').select('user_id').execute();
    expect(workspaces.some((workspace) => workspace.user_id === 'lister')).toBe(false);
  });

  it('refuses an allowlist entry that is not a host, naming it, and changes nothing', async () => {
    const before = await service.fetch(`/v1/admin/agents/${allowlistAgent.agentId}/config`, {
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    const response = await service.fetch(`/v1/admin/agents/${allowlistAgent.agentId}/config`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(
        networkConfig({ mode: 'allowlist', allow: ['ok.example.com', 'https://api.example.com/v1'] }),
      ),
    });
    expect(response.status).toBe(400);
    expect(await readJson(response)).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [
        {
          path: 'runtime.sandbox.network.allow.1',
          message:
            '"https://api.example.com/v1" must be a host name, a "*." wildcard or an IP literal, with an optional port from 1 to 65535',
        },
      ],
    });
    const after = await service.fetch(`/v1/admin/agents/${allowlistAgent.agentId}/config`, {
      headers: { Authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    expect(await readJson(after)).toEqual(await readJson(before));
  });

  it('the sandbox status stays the two booleans', async () => {
    const response = await service.fetch('/v1/sandbox/status', { headers: agentHeaders(packagesAgent.key, 'alice') });
    expect(await readJson(response)).toEqual({ enabled: true, available: true });
  });
});

describe.skipIf(!isRoot)('sandbox egress closed by the operator (bwrap)', () => {
  let service: TestService;
  let allowed: RecordingServer;

  beforeAll(async () => {
    allowed = await startRecordingServer({ body: 'allowed' });
  });
  afterAll(async () => {
    await service?.close();
    await allowed?.close();
  });

  it.each([
    ['egress off', {}],
    [
      'a tenant not in MORDN_SANDBOX_EGRESS_TENANTS',
      { MORDN_SANDBOX_EGRESS: 'on', MORDN_SANDBOX_EGRESS_TENANTS: 'ten_someone_else' },
    ],
  ])(
    'with %s an agent asking for an allowlist gets no proxy variable and nothing through (egress_off)',
    async (_case, operator) => {
      await service?.close();
      service = await startTestService({
        resolve: testResolver({ 'allowed.egress.test': ['127.0.0.1'] }),
        environment: {
          MORDN_SANDBOX_ENABLED: 'true',
          MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '127.0.0.1/32',
          MORDN_SANDBOX_EGRESS_PORTS: `80,443,${allowed.port}`,
          ...operator,
        },
      });
      const fixture = await createAgentFixture(service.database.db, {
        published: networkConfig({ mode: 'allowlist', allow: ['allowed.egress.test'] }),
      });
      const client = await connectSdkClient(service, fixture.key, 'closed');
      try {
        const result = await runPython(
          client,
          `import os
print(sorted(name for name in os.environ if "proxy" in name.lower()))
${RAW_PROXY_PY}
print(status("GET http://allowed.egress.test:${allowed.port}/ HTTP/1.1\\r\\nHost: allowed.egress.test\\r\\n\\r\\n"))`,
        );
        expect(result.stdout).toBe(
          `[]\nHTTP/1.1 403 Forbidden by the workspace network policy: allowed.egress.test:${allowed.port}\n`,
        );
        expect(allowed.requests).toEqual([]);
        const rows = await service.database.db.selectFrom('egress_log').select(['decision', 'reason']).execute();
        expect(rows).toEqual([{ decision: 'refused', reason: 'egress_off' }]);
        const listed = (await client.listTools()).tools.find((tool) => tool.name === 'sandbox_exec');
        expect(listed?.annotations?.openWorldHint).toBe(false);
      } finally {
        await client.close();
      }
    },
    SLOW,
  );
});

describe.skipIf(!isRoot)('an egress proxy that cannot serve', () => {
  let service: TestService;
  afterAll(() => service?.close());

  it('is reported by /readyz and makes agents with a network unavailable; agents without one keep their sandboxes', async () => {
    service = await startTestService({
      resolve: testResolver({}),
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_EGRESS: 'on',
        MORDN_SANDBOX_PACKAGE_INDEX_URL: 'https://index.unresolvable.test/simple/',
      },
    });
    const withNetwork = await createAgentFixture(service.database.db, {
      published: networkConfig({ mode: 'packages' }),
    });
    const without = await createAgentFixture(service.database.db, { published: networkConfig({ mode: 'none' }) });
    const readiness = await service.fetch('/readyz');
    expect(readiness.status).toBe(503);
    expect(await readJson(readiness)).toMatchObject({
      status: 'unavailable',
      checks: { egress: 'failed' },
      reasons: { egress: 'the package index host index.unresolvable.test cannot be resolved' },
    });
    const status = async (fixture: AgentFixture) =>
      readJson(await service.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key, 'someone') }));
    expect(await status(withNetwork)).toEqual({ enabled: true, available: false });
    expect(await status(without)).toEqual({ enabled: true, available: true });
    // Closed means closed: a call of the agent with a network is refused before anything runs.
    const client = await connectSdkClient(service, withNetwork.key, 'someone');
    try {
      const call = await callTool(client, 'sandbox_exec', { command: 'echo ran' });
      expect(call).toMatchObject({ isError: true, value: { error: { code: 'SANDBOX_UNAVAILABLE' } } });
    } finally {
      await client.close();
    }
  });
});
