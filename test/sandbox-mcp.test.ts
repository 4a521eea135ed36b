import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/auth/api-keys.js';
import { TRUNCATION_MARKER } from '../src/mcp/bounded-tool-result.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { rawRequest } from './support/http.js';
import { readJson } from './support/json.js';
import { INITIALIZE, rawMcp, SANDBOX_TOOLS } from './support/mcp.js';
import { type EraClient, type EraRequest, MCP_ERAS, MODERN_ERA, MODERN_META } from './support/mcp-eras.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    environment: {
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_REDACT_PATTERNS: JSON.stringify(['internal-token-[0-9]+']),
      MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
    },
  });
});
afterAll(async () => {
  await service.close();
});

async function workspaceCount(): Promise<number> {
  return (await service.database.db.selectFrom('workspaces').select('id').execute()).length;
}

/** The log lines of one request, parsed. */
function linesOf(requestId: string): Array<Record<string, unknown>> {
  return service.logs.map((line) => JSON.parse(line)).filter((entry) => entry.requestId === requestId);
}

/** One sample of the service's own metrics, or 0 when it has none. */
async function metricValue(sample: string): Promise<number> {
  const text = await (await service.fetch('/metrics')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}

const callTool = (client: EraClient, name: string, args: Record<string, unknown>) => client.callTool(name, args);

describe.each(MCP_ERAS)('the sandbox MCP endpoint: $name', (era) => {
  let fixture: AgentFixture;
  let client: EraClient;
  const connect = (key: string, userId: string) =>
    era.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(key, userId));
  /** One raw request of this era, with its headers. */
  const raw = (
    key: string,
    request: EraRequest | EraRequest[],
    options: { userId?: string; headers?: Record<string, string> } = {},
  ) =>
    rawMcp(service, key, Array.isArray(request) ? request.map((one) => one.body) : request.body, {
      ...options,
      headers: { ...(Array.isArray(request) ? request[0]?.headers : request.headers), ...options.headers },
    });

  beforeAll(async () => {
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
    client = await connect(fixture.key, 'alice');
  });
  afterAll(async () => {
    await client.close();
  });

  describe('MCP protocol', () => {
    it('lists exactly the six tools with strict schemas, statically (nothing is provisioned)', async () => {
      const before = await workspaceCount();
      const tools = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(SANDBOX_TOOLS);
      for (const tool of tools) {
        expect(tool.inputSchema.additionalProperties).toBe(false);
        const properties = Object.keys(tool.inputSchema.properties ?? {});
        for (const forbidden of [
          'user',
          'userId',
          'tenant',
          'tenantId',
          'agent',
          'agentId',
          'session',
          'workspaceId',
          'provider',
        ]) {
          expect(properties).not.toContain(forbidden);
        }
        expect(tool.description).toMatch(/untrusted|relative to the workspace/);
      }
      expect(await workspaceCount()).toBe(before);
    });

    it('lets a read-only key discover but not call', async () => {
      const reader = await createApiKey(service.database.db, fixture.agentId, ['read']);
      expect((await raw(reader.key, era.discovery())).status).toBe(200);
      const before = await workspaceCount();
      const call = await raw(reader.key, era.call('sandbox_exec', { command: 'true' }), { userId: 'reader' });
      expect(call.status).toBe(403);
      expect((await readJson(call)).code).toBe('INSUFFICIENT_PERMISSION');
      expect(await workspaceCount()).toBe(before);
    });

    it('refuses JSON-RPC batches, foreign origins, other methods and oversized bodies', async () => {
      const before = await workspaceCount();
      const batch = await raw(fixture.key, [era.discovery(), era.call('sandbox_exec', { command: 'true' })]);
      expect(batch.status).toBe(400);
      expect((await readJson(batch)).error.code).toBe(-32600);

      const foreign = await raw(fixture.key, era.call('sandbox_exec', { command: 'true' }), {
        headers: { Origin: 'https://evil.example' },
      });
      expect(foreign.status).toBe(403);
      expect((await readJson(foreign)).code).toBe('FORBIDDEN_ORIGIN');
      expect(await workspaceCount()).toBe(before);
      const sameOrigin = await raw(fixture.key, era.discovery(), { headers: { Origin: service.url } });
      expect(sameOrigin.status).toBe(200);

      for (const method of ['GET', 'DELETE']) {
        const response = await rawMcp(service, fixture.key, undefined, { method });
        expect(response.status).toBe(405);
        expect(response.headers.get('allow')).toBe('POST');
      }

      const big = await rawRequest(`${service.url}/v1/sandbox/mcp`, {
        method: 'POST',
        headers: [
          ...Object.entries(agentHeaders(fixture.key)),
          ...Object.entries(era.discovery().headers),
          ['Content-Type', 'application/json'],
        ] as Array<[string, string]>,
        chunks: [
          JSON.stringify(era.discovery().body).replace(/}$/, ',"padding":"'),
          ...Array.from({ length: 20 }, () => 'x'.repeat(64 * 1024)),
          '"}',
        ],
      }).catch(() => ({ status: -1, headers: {}, body: '' }));
      expect([413, -1]).toContain(big.status);
    });

    it('rejects an anon: user before anything else', async () => {
      const response = await raw(fixture.key, era.discovery(), { userId: 'anon:visitor' });
      expect(response.status).toBe(403);
      expect((await readJson(response)).code).toBe('ANONYMOUS_USER');
    });
  });

  describe('invalid arguments', () => {
    const INVALID: Array<[string, string, Record<string, unknown>, RegExp]> = [
      [
        'a NUL byte in a command',
        'sandbox_exec',
        { command: 'touch nul-ran\u0000true' },
        /^Invalid arguments for sandbox_exec: command: must not contain NUL bytes\.$/,
      ],
      [
        'a NUL byte in a storage path',
        'sandbox_import_file',
        { storagePath: 'uploads/a\u0000b' },
        /storagePath: must not contain NUL bytes/,
      ],
      ['an empty command', 'sandbox_exec', { command: '' }, /command: .*>=1/],
      [
        'a timeout past the ceiling',
        'sandbox_exec',
        { command: 'true', timeoutSeconds: 10_000 },
        /timeoutSeconds: .*<=120/,
      ],
      ['content that is not text', 'sandbox_write_file', { path: 'a.txt', content: 1 }, /content: .*expected string/],
      ['an unknown key', 'sandbox_read_file', { path: 'a.txt', userId: 'bob' }, /Unrecognized key: "userId"/],
    ];

    it.each(INVALID)(
      'refuse %s as INVALID_INPUT, provisioning nothing and logging no error',
      async (label, tool, args, message) => {
        const requestId = `invalid-${era.kind}-${label.replaceAll(' ', '-')}`;
        const before = await workspaceCount();
        const response = await raw(fixture.key, era.call(tool, args), {
          userId: 'validator',
          headers: { 'X-Request-Id': requestId },
        });
        expect(response.status).toBe(200);
        const { result } = await readJson(response);
        expect(result.isError).toBe(true);
        const { error } = JSON.parse(result.content[0].text);
        expect(error.code).toBe('INVALID_INPUT');
        expect(error.message).toMatch(message);
        expect(await workspaceCount()).toBe(before);
        const lines = linesOf(requestId);
        expect(lines.map((line) => line.msg)).toEqual(['request completed']);
        expect(lines[0]).toMatchObject({ level: 30, status: 200 });
        expect(JSON.stringify(lines)).not.toMatch(/stack|INTERNAL/);
      },
    );

    it('answer an unknown tool with UNKNOWN_TOOL, and malformed call parameters with JSON-RPC invalid params', async () => {
      const unknown = await readJson(await raw(fixture.key, era.call('sandbox_nope', {}), { userId: 'validator' }));
      expect(unknown.result.isError).toBe(true);
      expect(JSON.parse(unknown.result.content[0].text).error.code).toBe('UNKNOWN_TOOL');

      for (const [params, message] of [
        [{ name: 'sandbox_exec', arguments: ['ls'] }, 'Invalid params: params.arguments must be an object.'],
        [{ name: 'sandbox_exec', arguments: 'ls' }, 'Invalid params: params.arguments must be an object.'],
        [{ arguments: {} }, 'Invalid params: the tool name (params.name) must be a string.'],
      ] as const) {
        const response = await raw(fixture.key, era.request('tools/call', params, 7), {
          userId: 'validator',
          headers: { 'X-Request-Id': `malformed-call-${era.kind}` },
        });
        expect(await readJson(response)).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32602, message } });
      }
      expect(linesOf(`malformed-call-${era.kind}`).every((line) => line.level === 30)).toBe(true);
    });
  });

  describe('the tools', () => {
    it('run commands in a persistent per-user workspace created by the first call', async () => {
      const fresh = await createAgentFixture(service.database.db, { published: ENABLED });
      const freshClient = await connect(fresh.key, 'bob');
      try {
        const before = await workspaceCount();
        const written = await callTool(freshClient, 'sandbox_exec', {
          command: 'echo hello > note.txt && pwd && id -u',
        });
        expect(written).toEqual({
          isError: false,
          value: {
            exitCode: 0,
            stdout: '/workspace\n1000\n',
            stderr: '',
            truncated: false,
            timedOut: false,
            durationMs: expect.any(Number),
          },
        });
        expect(await workspaceCount()).toBe(before + 1);
        const read = await callTool(freshClient, 'sandbox_read_file', { path: 'note.txt' });
        expect(read.value).toEqual({ path: 'note.txt', size: 6, content: 'hello\n' });
      } finally {
        await freshClient.close();
      }
      // A second connection (another chat) of the same user sees the same workspace.
      const again = await connect(fresh.key, 'bob');
      try {
        expect((await callTool(again, 'sandbox_read_file', { path: 'note.txt' })).value.content).toBe('hello\n');
        expect(await workspaceCount()).toBeGreaterThan(0);
      } finally {
        await again.close();
      }
    });

    it('write, list and read files', async () => {
      expect((await callTool(client, 'sandbox_write_file', { path: 'docs/a.md', content: '# A\n' })).value).toEqual({
        path: 'docs/a.md',
        size: 4,
      });
      const listed = await callTool(client, 'sandbox_list_files', { path: 'docs' });
      expect(listed.value.entries).toEqual([{ name: 'a.md', type: 'file', size: 4 }]);
      const binary = await callTool(client, 'sandbox_exec', {
        command: "printf '\\x89PNG\\r\\n\\x1a\\n\\0\\0' > img.bin",
      });
      expect(binary.isError).toBe(false);
      const refused = await callTool(client, 'sandbox_read_file', { path: 'img.bin' });
      expect(refused.isError).toBe(true);
      expect(refused.value.error.code).toBe('NOT_TEXT');
    });

    it.each([['../x'], ['/etc/passwd'], ['a/../../b'], ['a\u0000b'], ['./']])(
      'refuses the path %j for every file tool',
      async (badPath) => {
        for (const [tool, args] of [
          ['sandbox_read_file', { path: badPath }],
          ['sandbox_write_file', { path: badPath, content: 'x' }],
          ['sandbox_list_files', { path: badPath }],
          ['sandbox_publish_file', { path: badPath }],
        ] as const) {
          const result = await callTool(client, tool, args);
          expect(result.isError, `${tool} ${badPath}`).toBe(true);
          expect(result.value.error.code).toBe('INVALID_PATH');
        }
      },
    );

    it('refuses symlink escapes for read, write, list, import and publish, changing nothing on the host', async () => {
      const plant = await callTool(client, 'sandbox_exec', {
        command:
          'ln -s /etc etc-link && ln -s /proc/self/environ env-link && ln -s /root/secret dangling && ln -s / root && mkdir -p real && ln -s real linked-dir',
      });
      expect(plant.value.exitCode).toBe(0);
      for (const [tool, args] of [
        ['sandbox_read_file', { path: 'etc-link/passwd' }],
        ['sandbox_read_file', { path: 'env-link' }],
        ['sandbox_read_file', { path: 'dangling' }],
        ['sandbox_list_files', { path: 'etc-link' }],
        ['sandbox_list_files', { path: 'root' }],
        ['sandbox_write_file', { path: 'root/tmp/mordn-escape', content: 'x' }],
        ['sandbox_write_file', { path: 'dangling', content: 'x' }],
        ['sandbox_write_file', { path: 'linked-dir/file.txt', content: 'x' }],
        ['sandbox_publish_file', { path: 'etc-link/passwd', filename: 'passwd.txt' }],
        ['sandbox_publish_file', { path: 'env-link', filename: 'environ.txt' }],
      ] as const) {
        const result = await callTool(client, tool, args);
        expect(result.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
        expect(['SYMLINK', 'NOT_FOUND', 'NOT_A_FILE', 'NOT_A_DIRECTORY'], `${tool} ${JSON.stringify(args)}`).toContain(
          result.value.error.code,
        );
      }
      expect(existsSync('/tmp/mordn-escape')).toBe(false);
      expect(existsSync('/root/secret')).toBe(false);

      // Import follows no link either: an `uploads` folder that is a link to the host's /tmp.
      const uploaded = await readJson(
        await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'pixel.png' }, 'alice'),
      );
      expect(
        (await callTool(client, 'sandbox_exec', { command: 'rm -rf uploads && ln -s /tmp uploads' })).value.exitCode,
      ).toBe(0);
      const imported = await callTool(client, 'sandbox_import_file', { storagePath: uploaded.storagePath });
      expect(imported.isError).toBe(true);
      expect(imported.value.error.code).toBe('SYMLINK');
      expect(existsSync('/tmp/pixel.png')).toBe(false);
      await callTool(client, 'sandbox_exec', { command: 'rm uploads' });
    });

    it('has no network: a canary listener on the host is never reached', async () => {
      let connections = 0;
      const canary = net.createServer((socket) => {
        connections += 1;
        socket.destroy();
      });
      await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
      const port = (canary.address() as net.AddressInfo).port;
      try {
        const result = await callTool(client, 'sandbox_exec', {
          command: `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 2)"; echo exit=$?`,
        });
        expect(result.value.stdout).toMatch(/exit=1/);
        expect(connections).toBe(0);
      } finally {
        canary.close();
      }
    });

    it("imports only the caller's own uploads, and publishes from the stored record", async () => {
      const csv = 'region,total\nnorth,3\nsouth,5\n';
      const uploaded = await readJson(
        await upload(service, fixture.key, { bytes: csv, filename: 'sales.csv', type: 'text/csv' }, 'alice'),
      );
      const imported = await callTool(client, 'sandbox_import_file', { storagePath: uploaded.storagePath });
      expect(imported.value).toEqual({
        path: 'uploads/sales.csv',
        size: csv.length,
        mediaType: 'text/csv',
        filename: 'sales.csv',
      });
      const second = await callTool(client, 'sandbox_import_file', { storagePath: uploaded.storagePath });
      expect(second.value.path).toBe('uploads/sales (2).csv');

      const otherUser = await connect(fixture.key, 'mallory');
      try {
        const stolen = await callTool(otherUser, 'sandbox_import_file', { storagePath: uploaded.storagePath });
        const missing = await callTool(otherUser, 'sandbox_import_file', {
          storagePath: 'uploads/00000000000000000000000000000000',
        });
        expect(stolen).toEqual(missing);
        expect(stolen.value.error.code).toBe('UPLOAD_NOT_FOUND');
      } finally {
        await otherUser.close();
      }

      const made = await callTool(client, 'sandbox_exec', {
        command:
          "python3 -c \"import csv,sys; rows=list(csv.reader(open('uploads/sales.csv'))); print('region,double'); [print(f'{r[0]},{int(r[1])*2}') for r in rows[1:]]\" > doubled.csv",
      });
      expect(made.value.exitCode).toBe(0);
      const published = await callTool(client, 'sandbox_publish_file', {
        path: 'doubled.csv',
        filename: 'Doubled sales.csv',
      });
      expect(published).toEqual({
        isError: false,
        value: {
          file: {
            type: 'file',
            url: expect.stringContaining('/v1/files/artifacts/'),
            storagePath: expect.stringMatching(/^artifacts\/[0-9a-f]{32}$/),
            filename: 'Doubled sales.csv',
            mediaType: 'text/csv',
            size: 'region,double\nnorth,6\nsouth,10\n'.length,
          },
        },
      });
      const download = await fetch(published.value.file.url);
      expect(await download.text()).toBe('region,double\nnorth,6\nsouth,10\n');
      expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
      const row = await service.database.db
        .selectFrom('stored_files')
        .selectAll()
        .where('storage_path', '=', published.value.file.storagePath)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        kind: 'artifact',
        user_id: 'alice',
        tenant_id: fixture.tenantId,
        media_type: 'text/csv',
      });

      const resigned = await readJson(
        await service.fetch('/v1/uploads/resign', {
          method: 'POST',
          headers: { ...agentHeaders(fixture.key, 'alice'), 'Content-Type': 'application/json' },
          body: JSON.stringify({ storagePath: published.value.file.storagePath }),
        }),
      );
      expect(resigned.file).toMatchObject({
        filename: 'Doubled sales.csv',
        mediaType: 'text/csv',
        storagePath: published.value.file.storagePath,
      });
    });

    it('refuses to publish what is not a publishable type, and never returns a file then', async () => {
      await callTool(client, 'sandbox_write_file', {
        path: 'page.html',
        content: '<!doctype html><script>alert(1)</script>',
      });
      const result = await callTool(client, 'sandbox_publish_file', { path: 'page.html' });
      expect(result.isError).toBe(true);
      expect(result.value.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(result.value.file).toBeUndefined();
    });

    it('redacts the agent key and operator patterns from every result', async () => {
      const result = await callTool(client, 'sandbox_exec', {
        command: `echo key=${fixture.key}; echo token=internal-token-12345; echo other=mordn_${'Z'.repeat(43)}`,
      });
      expect(result.value.stdout).toBe('key=[redacted]\ntoken=[redacted]\nother=[redacted]\n');
      await callTool(client, 'sandbox_write_file', { path: 'secret.txt', content: `the key is ${fixture.key}` });
      expect((await callTool(client, 'sandbox_read_file', { path: 'secret.txt' })).value.content).toBe(
        'the key is [redacted]',
      );
    });

    it('keeps the service environment out of the sandbox', async () => {
      const result = await callTool(client, 'sandbox_exec', {
        command: 'env; cat /proc/self/environ | tr "\\0" "\\n"',
      });
      expect(result.value.stdout).not.toContain('MORDN_');
      expect(result.value.stdout).not.toContain(service.config.dataDir);
      const listing = await callTool(client, 'sandbox_exec', {
        command: `ls ${service.config.dataDir} 2>&1; ls /work 2>&1; echo done`,
      });
      expect(listing.value.stdout).toMatch(/No such file/);
    });

    it('times out a command and caps endless output while streaming', async () => {
      const slow = await callTool(client, 'sandbox_exec', { command: 'sleep 10', timeoutSeconds: 1 });
      expect(slow.value).toMatchObject({ timedOut: true, exitCode: null });
      const noisy = await callTool(client, 'sandbox_exec', { command: 'yes', timeoutSeconds: 1 });
      expect(noisy.value.truncated).toBe(true);
      // Kept up to the output limit while streaming, then cut to what one response can carry.
      expect(Buffer.byteLength(noisy.value.stdout)).toBeLessThanOrEqual(service.config.sandbox.maxOutputBytes);
      expect(noisy.value.stdout.endsWith(TRUNCATION_MARKER)).toBe(true);
    });

    it("cannot see another user's workspace", async () => {
      await callTool(client, 'sandbox_write_file', { path: 'alice-only.txt', content: 'private' });
      const bob = await connect(fixture.key, 'bob-2');
      try {
        const read = await callTool(bob, 'sandbox_read_file', { path: 'alice-only.txt' });
        expect(read.value.error.code).toBe('NOT_FOUND');
        const search = await callTool(bob, 'sandbox_exec', {
          // Everywhere but the read-only system tree and /proc (a workspace can be in neither).
          command:
            'ls /workspace/.. ; find / \\( -path /usr -o -path /proc -o -path /sys \\) -prune -o -name alice-only.txt -print 2>/dev/null | head -1; echo end',
        });
        expect(search.value.stdout).not.toContain('alice-only.txt');
      } finally {
        await bob.close();
      }
      const directories = await readdir(path.join(service.config.dataDir, 'workspaces'));
      expect(directories.length).toBeGreaterThan(1);
    });
  });
});

describe('the legacy era on the wire', () => {
  let fixture: AgentFixture;
  beforeAll(async () => {
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });

  it('negotiates 2025-11-25 proposed by a client, and answers a newer proposal with its own version', async () => {
    const response = await rawMcp(service, fixture.key, INITIALIZE);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await readJson(response);
    expect(body.result.protocolVersion).toBe('2025-11-25');
    expect(body.result.serverInfo.name).toBe('mordn-sandbox');
    expect(body.result.capabilities).toEqual({ tools: { listChanged: false } });

    const future = await rawMcp(service, fixture.key, {
      ...INITIALIZE,
      params: { ...INITIALIZE.params, protocolVersion: '2099-01-01' },
    });
    expect(future.status).toBe(200);
    expect((await readJson(future)).result.protocolVersion).toBe('2025-11-25');
  });

  it('works with the AI SDK MCP client too', async () => {
    const aiClient = await createMCPClient({
      transport: { type: 'http', url: `${service.url}/v1/sandbox/mcp`, headers: agentHeaders(fixture.key, 'alice') },
    });
    try {
      const tools = await aiClient.tools();
      expect(Object.keys(tools).sort()).toEqual([...SANDBOX_TOOLS].sort());
      const result = await tools.sandbox_exec?.execute?.(
        { command: 'echo from-ai-sdk' },
        { toolCallId: 'call-1', messages: [] },
      );
      expect(JSON.stringify(result)).toContain('from-ai-sdk');
    } finally {
      await aiClient.close();
    }
  });
});

describe('the 2026-07-28 era on the wire', () => {
  let fixture: AgentFixture;
  const modern = (request: EraRequest, headers: Record<string, string> = {}, userId = 'wire') =>
    rawMcp(service, fixture.key, request.body, { userId, headers: { ...request.headers, ...headers } });
  beforeAll(async () => {
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });

  it('answers server/discover with the revision, the capabilities and the server, statically', async () => {
    const before = await workspaceCount();
    const response = await modern(MODERN_ERA.discovery());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const { result } = await readJson(response);
    expect(result).toMatchObject({
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: { listChanged: false } },
      instructions: expect.stringContaining('untrusted'),
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mordn-sandbox', version: '1.0.0' } },
    });
    expect(await workspaceCount()).toBe(before);
  });

  it('marks every result complete and names the server in it', async () => {
    const { result } = await readJson(await modern(MODERN_ERA.call('sandbox_list_files', {})));
    expect(result.resultType).toBe('complete');
    expect(result._meta['io.modelcontextprotocol/serverInfo'].name).toBe('mordn-sandbox');
    expect(result.structuredContent).toEqual({
      path: '.',
      entries: [],
      truncated: false,
      usage: {
        bytesUsed: expect.any(Number),
        quotaBytes: service.config.sandbox.workspaceMaxBytes,
        fileCount: 0,
        fileQuota: service.config.sandbox.weakLimits ? null : expect.any(Number),
        deleteAfter: expect.any(String),
      },
    });
  });

  it('refuses headers that disagree with the body with -32020, running nothing', async () => {
    const call = MODERN_ERA.call('sandbox_exec', { command: 'touch header-canary' });
    const before = await workspaceCount();
    for (const [headers, fragment] of [
      [{ 'Mcp-Method': 'tools/list' }, 'Mcp-Method header names tools/list'],
      [{ 'Mcp-Name': 'sandbox_read_file' }, 'Mcp-Name header names "sandbox_read_file"'],
      [{ 'MCP-Protocol-Version': '2025-11-25' }, 'MCP-Protocol-Version'],
    ] as const) {
      const response = await modern(call, headers, 'header-mismatch');
      expect(response.status, JSON.stringify(headers)).toBe(400);
      const { error } = await readJson(response);
      expect(error.code).toBe(-32020);
      expect(error.message).toContain(fragment);
    }
    const missing = await rawMcp(service, fixture.key, call.body, { userId: 'header-mismatch' });
    expect(missing.status).toBe(400);
    expect((await readJson(missing)).error.message).toContain('MCP-Protocol-Version header is absent');
    expect(await workspaceCount()).toBe(before);
    const listed = await readJson(await modern(MODERN_ERA.call('sandbox_list_files', {}), {}, 'header-mismatch'));
    expect(listed.result.structuredContent.entries).toEqual([]);
  });

  it('answers a revision it does not serve with -32022 and the supported list', async () => {
    const call = MODERN_ERA.call('sandbox_exec', { command: 'true' });
    const body = {
      ...call.body,
      params: {
        ...(call.body.params as Record<string, unknown>),
        _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
      },
    };
    const response = await rawMcp(service, fixture.key, body, {
      headers: { ...call.headers, 'MCP-Protocol-Version': '2099-01-01' },
    });
    expect(response.status).toBe(400);
    expect((await readJson(response)).error).toEqual({
      code: -32022,
      message: 'Unsupported protocol version: 2099-01-01',
      data: { supported: ['2026-07-28'], requested: '2099-01-01' },
    });
  });

  it('has no ping and no resources: -32601 with 404', async () => {
    for (const method of ['ping', 'resources/list', 'prompts/list']) {
      const response = await modern(MODERN_ERA.request(method, {}));
      expect(response.status, method).toBe(404);
      expect((await readJson(response)).error.code).toBe(-32601);
    }
  });

  it('refuses a legacy handshake sent with the modern header', async () => {
    const response = await rawMcp(service, fixture.key, INITIALIZE, {
      headers: { 'MCP-Protocol-Version': '2026-07-28' },
    });
    expect(response.status).toBe(400);
    expect((await readJson(response)).error.code).toBe(-32020);
  });
});

describe("the MCP client's GET probe", () => {
  let fixture: AgentFixture;
  beforeAll(async () => {
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  });

  const PROBES = 'mordn_http_probes_total{method="GET",route="/v1/sandbox/mcp"}';
  const GET_405 = 'mordn_http_requests_total{method="GET",route="/v1/sandbox/mcp",status="405"}';

  it('is a debug line, counted apart from the request metrics', async () => {
    const probesBefore = await metricValue(PROBES);
    const refusalsBefore = await metricValue(GET_405);
    const aiClient = await createMCPClient({
      transport: {
        type: 'http',
        url: `${service.url}/v1/sandbox/mcp`,
        headers: { ...agentHeaders(fixture.key, 'alice'), 'X-Request-Id': 'ai-sdk-session' },
      },
    });
    try {
      await aiClient.tools();
    } finally {
      await aiClient.close();
    }
    const lines = linesOf('ai-sdk-session');
    const probes = lines.filter((line) => line.method === 'GET');
    expect(probes.length).toBeGreaterThan(0);
    for (const probe of probes) expect(probe).toMatchObject({ level: 20, status: 405, code: 'METHOD_NOT_ALLOWED' });
    expect(lines.filter((line) => (line.level as number) >= 40)).toEqual([]);
    expect(await metricValue(PROBES)).toBe(probesBefore + probes.length);
    expect(await metricValue(GET_405)).toBe(refusalsBefore);
  });

  it('is told apart from a GET that is not a probe, which stays a counted 405', async () => {
    const before = await metricValue(GET_405);
    const response = await service.fetch('/v1/sandbox/mcp', { headers: { 'X-Request-Id': 'browser-get' } });
    expect(response.status).toBe(405);
    expect(linesOf('browser-get')).toEqual([expect.objectContaining({ level: 30, status: 405 })]);
    expect(await metricValue(GET_405)).toBe(before + 1);
  });
});
