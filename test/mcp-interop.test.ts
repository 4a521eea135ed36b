import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, type ExpectStatic, expect, it } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type HeaderProxy, jsonRpcMethods, type ProxiedRequest, startHeaderProxy } from './support/header-proxy.js';
import { readJson } from './support/json.js';
import { SANDBOX_TOOLS } from './support/mcp.js';
import { LEGACY_ERA, MODERN_ERA, MODERN_PROTOCOL_VERSION } from './support/mcp-eras.js';
import {
  aiSdkClient,
  type CallToolResult,
  decodeCallToolResult,
  eraClient,
  type InspectorEra,
  type InteropClient,
  inspectorClient,
  inspectorHome,
  runInspector,
  sdkV2AutoClient,
} from './support/mcp-interop-clients.js';
import {
  type ConformanceCheck,
  type ConformanceRevision,
  failedChecks,
  runConformance,
} from './support/mcp-interop-conformance.js';
import { findMcpClients } from './support/mcp-interop-install.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { upload } from './support/upload.js';

/**
 * Interop of the sandbox MCP endpoint with real MCP clients of both protocol eras: the official
 * SDK clients in this process (v1: legacy handshake; v2: pinned to 2026-07-28 and in `auto`
 * negotiation), and, as processes of their own on Node 22 (installed by `scripts/mcp-clients.sh`),
 * the MCP Inspector CLI in its three eras, @ai-sdk/mcp of AI SDK 7, and the official conformance
 * suite. Every client runs the same walkthrough of the six tools as a user of its own, through a
 * recording proxy that shows which era it spoke on the wire. The database is not what this
 * tests, so it runs in the SQLite project only.
 */

const SQLITE_PROJECT = (process.env.MORDN_TEST_DATABASE ?? 'sqlite') === 'sqlite';
const found = SQLITE_PROJECT ? findMcpClients() : { reason: 'interop runs in the SQLite project only' };
const install = 'install' in found ? found.install : undefined;
if ('reason' in found && SQLITE_PROJECT) console.warn(`Skipping the out-of-process MCP clients: ${found.reason}`);

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const SERVICE_ENVIRONMENT = { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' };
const LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** The requests one user's client sent, as the recording proxy saw them (POSTs only). */
function postsOf(proxy: HeaderProxy, userId: string): ProxiedRequest[] {
  return proxy.requests.filter((request) => request.headers['x-chat-user'] === userId && request.method === 'POST');
}

/**
 * The era on the wire: a modern client discovers with `server/discover`, never `initialize`, and
 * sends `MCP-Protocol-Version: 2026-07-28` (and `Mcp-Method`, and `Mcp-Name` on calls) with every
 * request; a legacy one opens with `initialize` proposing 2025-11-25 and never sends
 * `server/discover`.
 */
function expectEraOnWire(check: ExpectStatic, posts: ProxiedRequest[], kind: 'legacy' | 'modern'): void {
  const methods = posts.flatMap(jsonRpcMethods);
  check(methods).toContain('tools/list');
  check(methods.filter((method) => method === 'tools/call').length).toBeGreaterThanOrEqual(SANDBOX_TOOLS.length);
  if (kind === 'modern') {
    check(methods).toContain('server/discover');
    check(methods).not.toContain('initialize');
    for (const post of posts) {
      const [method] = jsonRpcMethods(post);
      check(post.headers['mcp-protocol-version'], method).toBe(MODERN_PROTOCOL_VERSION);
      check(post.headers['mcp-method'], method).toBe(method);
      if (method === 'tools/call') {
        check(post.headers['mcp-name']).toBe(JSON.parse(post.body.toString('utf8')).params.name);
      }
    }
  } else {
    check(methods[0]).toBe('initialize');
    check(methods).not.toContain('server/discover');
    const initialize = JSON.parse((posts[0] as ProxiedRequest).body.toString('utf8'));
    check(initialize.params.protocolVersion).toBe(LEGACY_PROTOCOL_VERSION);
    // After the handshake (one per connection: the Inspector CLI connects once per request),
    // every request names the negotiated legacy revision.
    for (const post of posts.filter((request) => !jsonRpcMethods(request).includes('initialize'))) {
      check(post.headers['mcp-protocol-version']).toBe(LEGACY_PROTOCOL_VERSION);
    }
  }
}

describe.skipIf(!SQLITE_PROJECT)('the sandbox MCP endpoint with real MCP clients', () => {
  let service: TestService;
  let fixture: AgentFixture;
  /** Every client connects through it; it adds nothing and records what each sent. */
  let recorder: HeaderProxy;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    service = await startTestService({ environment: SERVICE_ENVIRONMENT });
    fixture = await createAgentFixture(service.database.db, { published: ENABLED });
    recorder = await startHeaderProxy(service.url);
  });
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
    await recorder?.close();
    await service?.close();
  });

  /**
   * The walkthrough every client runs as `userId`: list the tools; run a command; write, read and
   * list a file; import a real upload (a CSV sent through POST /v1/uploads first); publish it and
   * download the published bytes; and check on the wire which era it spoke.
   */
  async function walkThrough(check: ExpectStatic, client: InteropClient, userId: string): Promise<void> {
    const csv = `region,total\nnorth,${userId.length}\nsouth,${userId}\n`;
    const uploaded = await readJson(
      await upload(service, fixture.key, { bytes: csv, filename: 'sales.csv', type: 'text/csv' }, userId),
    );
    check(uploaded.storagePath).toMatch(/^uploads\/[0-9a-f]{32}$/);
    const note = `notes of ${userId}, über alles\nsecond line\n`;
    const noteSize = Buffer.byteLength(note);
    const publishedName = `${userId} sales.csv`;
    const { tools, outcomes } = await client.run(`${recorder.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, userId), [
      { tool: 'sandbox_exec', args: { command: `echo "hello from ${userId}" && pwd` } },
      { tool: 'sandbox_write_file', args: { path: 'notes/interop.txt', content: note } },
      { tool: 'sandbox_read_file', args: { path: 'notes/interop.txt' } },
      { tool: 'sandbox_list_files', args: { path: 'notes' } },
      { tool: 'sandbox_import_file', args: { storagePath: uploaded.storagePath } },
      { tool: 'sandbox_publish_file', args: { path: 'uploads/sales.csv', filename: publishedName } },
    ]);
    check(tools).toEqual(SANDBOX_TOOLS);
    const [exec, written, read, listed, imported, published] = outcomes;
    check(exec).toEqual({
      isError: false,
      value: {
        exitCode: 0,
        stdout: `hello from ${userId}\n/workspace\n`,
        stderr: '',
        truncated: false,
        timedOut: false,
        durationMs: expect.any(Number),
      },
    });
    check(written).toEqual({ isError: false, value: { path: 'notes/interop.txt', size: noteSize } });
    check(read).toEqual({ isError: false, value: { path: 'notes/interop.txt', size: noteSize, content: note } });
    check(listed).toEqual({ isError: false, value: expect.anything() });
    check(listed?.value.entries).toEqual([{ name: 'interop.txt', type: 'file', size: noteSize }]);
    check(imported).toEqual({
      isError: false,
      value: { path: 'uploads/sales.csv', size: csv.length, mediaType: 'text/csv', filename: 'sales.csv' },
    });
    check(published?.isError).toBe(false);
    check(published?.value.file).toMatchObject({ filename: publishedName, mediaType: 'text/csv', size: csv.length });
    expectEraOnWire(check, postsOf(recorder, userId), client.kind);
    const download = await fetch(published?.value.file.url);
    check(download.status).toBe(200);
    check(Buffer.from(await download.arrayBuffer()).toString('utf8')).toBe(csv);
  }

  describe.concurrent('each client runs every tool, in its own workspace', () => {
    it('the SDK v1 client (legacy handshake)', { timeout: 60_000 }, async ({ expect: check }) => {
      await walkThrough(check, eraClient(LEGACY_ERA, 'SDK v1 client'), 'sdk-v1');
    });

    it('the SDK v2 client pinned to 2026-07-28', { timeout: 60_000 }, async ({ expect: check }) => {
      await walkThrough(check, eraClient(MODERN_ERA, 'SDK v2 client, pinned'), 'sdk-v2-pinned');
    });

    it('the SDK v2 client in auto negotiation, which lands on 2026-07-28', { timeout: 60_000 }, async ({
      expect: check,
    }) => {
      let negotiated: string | undefined;
      await walkThrough(
        check,
        sdkV2AutoClient((version) => {
          negotiated = version;
        }),
        'sdk-v2-auto',
      );
      check(negotiated).toBe(MODERN_PROTOCOL_VERSION);
      check(postsOf(recorder, 'sdk-v2-auto').flatMap(jsonRpcMethods)[0]).toBe('server/discover');
    });

    it.skipIf(install === undefined).for<InspectorEra>(['modern', 'auto', 'legacy'])(
      'the MCP Inspector CLI, --protocol-era %s',
      { timeout: 120_000 },
      async (era, { expect: check }) => {
        const { home, remove } = await inspectorHome();
        cleanups.push(remove);
        await walkThrough(check, inspectorClient(required(install), era, home), `inspector-${era}`);
      },
    );

    it.skipIf(install === undefined)(
      '@ai-sdk/mcp 2.0.3 (AI SDK 7), createMCPClient with the http transport, legacy era',
      async ({ expect: check }) => {
        let version: string | undefined;
        await walkThrough(
          check,
          aiSdkClient(required(install), (reported) => {
            version = reported;
          }),
          'ai-sdk-mcp',
        );
        check(version).toBe('2.0.3');
      },
      60_000,
    );

    it.skipIf(install === undefined)(
      'the Inspector CLI types --tool-arg values as JSON; --tool-args-json passes them as given',
      async ({ expect: check }) => {
        const { home, remove } = await inspectorHome();
        cleanups.push(remove);
        const inspect = (request: Parameters<typeof runInspector>[1]['request']) =>
          runInspector(required(install), {
            era: 'modern',
            url: `${recorder.url}/v1/sandbox/mcp`,
            headers: agentHeaders(fixture.key, 'inspector-typing'),
            home,
            request,
          });
        // `content=42` reaches the server as the number 42, which the schema refuses (exit 5).
        const typed = await inspect({
          method: 'tools/call',
          tool: 'sandbox_write_file',
          args: { path: 'n.txt', content: '42' },
        });
        check(typed.code).toBe(5);
        const refused = decodeCallToolResult(typed.output as CallToolResult);
        check(refused.isError).toBe(true);
        check(refused.value.error.code).toBe('INVALID_INPUT');
        check(refused.value.error.message).toMatch(/content: .*expected string, received number/);
        const verbatim = await inspect({
          method: 'tools/call',
          tool: 'sandbox_write_file',
          argsJson: { path: 'n.txt', content: '42' },
        });
        check(verbatim.code).toBe(0);
        check(decodeCallToolResult(verbatim.output as CallToolResult)).toEqual({
          isError: false,
          value: { path: 'n.txt', size: 2 },
        });
      },
      60_000,
    );
  });
});

/** Why the server cannot take part in a scenario: it has none of the features the scenario tests. */
const NO_PROMPTS = 'the server has no prompts';
const NO_RESOURCES = 'the server has no resources';
const NO_COMPLETION = 'the server has no completion';
const NO_LOGGING = 'the server has no logging';
const NO_FIXTURE_TOOL = "it calls one of the suite's own fixture tools (test_*), which the server does not have";
const NO_CLIENT_REQUESTS = 'the server never asks the client for input (sampling, elicitation, roots)';
const NO_SESSIONS = 'the server is stateless: it issues no MCP-Session-Id';
const NO_TASKS = 'the tasks extension, which the server does not implement';
const NO_SCHEMA_FIXTURE = "it looks for the suite's fixture tool json_schema_2020_12_tool";
const NO_HEADER_TOOLS = 'the server has no tools with x-mcp-header annotations';

/**
 * The conformance scenarios that apply to this server (no prompts, resources, completion,
 * logging or client requests), by revision, each with the checks that are known not to pass
 * (empty: every check passes). `server-stateless` checks the undeclared-capability rejection
 * with the suite's diagnostic tool `test_missing_capability`; the server has no such tool and
 * answers the call with an isError result (UNKNOWN_TOOL), which that check reads as "executed".
 * `caching` also asks prompts/list and resources/(templates/)list, which the server does not have.
 */
const APPLICABLE: Record<ConformanceRevision, Record<string, string[]>> = {
  '2025-11-25': {
    'server-initialize': [],
    ping: [],
    'tools-list': [],
    'dns-rebinding-protection': [],
  },
  '2026-07-28': {
    'server-stateless': ['sep-2575-server-rejects-undeclared-capability', 'sep-2575-missing-capability-http-400'],
    'tools-list': [],
    'server-sse-multiple-streams': [],
    'http-header-validation': [],
    'input-required-result-unsupported-methods': [],
    caching: [
      'sep-2549-prompts-list-caching-hints',
      'sep-2549-resources-list-caching-hints',
      'sep-2549-resources-templates-list-caching-hints',
    ],
    'dns-rebinding-protection': [],
  },
};

/** Every other scenario each revision's run includes, and why it does not apply. */
const NOT_APPLICABLE: Record<ConformanceRevision, Record<string, string>> = {
  '2025-11-25': {
    'server-session-lifecycle': NO_SESSIONS,
    'server-sse-multiple-streams': NO_SESSIONS,
    'logging-set-level': NO_LOGGING,
    'completion-complete': NO_COMPLETION,
    'tools-call-simple-text': NO_FIXTURE_TOOL,
    'tools-call-image': NO_FIXTURE_TOOL,
    'tools-call-audio': NO_FIXTURE_TOOL,
    'tools-call-embedded-resource': NO_FIXTURE_TOOL,
    'tools-call-mixed-content': NO_FIXTURE_TOOL,
    'tools-call-with-logging': NO_FIXTURE_TOOL,
    'tools-call-error': NO_FIXTURE_TOOL,
    'tools-call-with-progress': NO_FIXTURE_TOOL,
    'tools-call-sampling': NO_CLIENT_REQUESTS,
    'tools-call-elicitation': NO_CLIENT_REQUESTS,
    'elicitation-sep1034-defaults': NO_CLIENT_REQUESTS,
    'elicitation-sep1330-enums': NO_CLIENT_REQUESTS,
    'resources-list': NO_RESOURCES,
    'resources-read-text': NO_RESOURCES,
    'resources-read-binary': NO_RESOURCES,
    'resources-templates-read': NO_RESOURCES,
    'resources-subscribe': NO_RESOURCES,
    'resources-unsubscribe': NO_RESOURCES,
    'prompts-list': NO_PROMPTS,
    'prompts-get-simple': NO_PROMPTS,
    'prompts-get-with-args': NO_PROMPTS,
    'prompts-get-embedded-resource': NO_PROMPTS,
    'prompts-get-with-image': NO_PROMPTS,
    'json-schema-2020-12': NO_SCHEMA_FIXTURE,
    'server-sse-polling': NO_SESSIONS,
  },
  '2026-07-28': {
    'completion-complete': NO_COMPLETION,
    'tools-call-simple-text': NO_FIXTURE_TOOL,
    'tools-call-image': NO_FIXTURE_TOOL,
    'tools-call-audio': NO_FIXTURE_TOOL,
    'tools-call-embedded-resource': NO_FIXTURE_TOOL,
    'tools-call-mixed-content': NO_FIXTURE_TOOL,
    'tools-call-error': NO_FIXTURE_TOOL,
    'tools-call-with-progress': NO_FIXTURE_TOOL,
    'resources-list': NO_RESOURCES,
    'resources-read-text': NO_RESOURCES,
    'resources-read-binary': NO_RESOURCES,
    'resources-templates-read': NO_RESOURCES,
    'sep-2164-resource-not-found': NO_RESOURCES,
    'prompts-list': NO_PROMPTS,
    'prompts-get-simple': NO_PROMPTS,
    'prompts-get-with-args': NO_PROMPTS,
    'prompts-get-embedded-resource': NO_PROMPTS,
    'prompts-get-with-image': NO_PROMPTS,
    'input-required-result-basic-elicitation': NO_CLIENT_REQUESTS,
    'input-required-result-basic-sampling': NO_CLIENT_REQUESTS,
    'input-required-result-basic-list-roots': NO_CLIENT_REQUESTS,
    'input-required-result-request-state': NO_CLIENT_REQUESTS,
    'input-required-result-multiple-input-requests': NO_CLIENT_REQUESTS,
    'input-required-result-multi-round': NO_CLIENT_REQUESTS,
    'input-required-result-missing-input-response': NO_CLIENT_REQUESTS,
    'input-required-result-non-tool-request': NO_CLIENT_REQUESTS,
    'input-required-result-result-type': NO_CLIENT_REQUESTS,
    'input-required-result-tampered-state': NO_CLIENT_REQUESTS,
    'input-required-result-capability-check': NO_CLIENT_REQUESTS,
    'input-required-result-ignore-extra-params': NO_CLIENT_REQUESTS,
    'input-required-result-validate-input': NO_CLIENT_REQUESTS,
    'tasks-lifecycle': NO_TASKS,
    'tasks-capability-negotiation': NO_TASKS,
    'tasks-wire-fields': NO_TASKS,
    'tasks-request-state-removal': NO_TASKS,
    'tasks-mrtr-input': NO_TASKS,
    'tasks-request-headers': NO_TASKS,
    'tasks-dispatch-and-envelope': NO_TASKS,
    'tasks-status-notifications': NO_TASKS,
    'tasks-required-task-error': NO_TASKS,
    'tasks-mrtr-composition': NO_TASKS,
    'json-schema-2020-12': NO_SCHEMA_FIXTURE,
    'http-custom-header-server-validation': NO_HEADER_TOOLS,
  },
};

describe.skipIf(!SQLITE_PROJECT || install === undefined)(
  'the official MCP conformance suite (server scenarios)',
  () => {
    let service: TestService;
    let fixture: AgentFixture;
    /**
     * The suite sends no headers of its own, so it talks to the service through a proxy that adds
     * the agent key and a user. The proxy is the service's public URL, as a reverse proxy would be:
     * the DNS-rebinding scenario sends `Origin: <the URL it tests>`, which the endpoint accepts only
     * for its own origin.
     */
    let gateway: HeaderProxy;
    const results = new Map<ConformanceRevision, Map<string, ConformanceCheck[]>>();
    const outputDirs: string[] = [];

    beforeAll(async () => {
      gateway = await startHeaderProxy(
        () => service.url,
        () => agentHeaders(fixture.key, 'conformance'),
      );
      service = await startTestService({ environment: { ...SERVICE_ENVIRONMENT, MORDN_PUBLIC_URL: gateway.url } });
      fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const revisions: ConformanceRevision[] = ['2025-11-25', '2026-07-28'];
      await Promise.all(
        revisions.map(async (revision) => {
          const outputDir = await mkdtemp(path.join(tmpdir(), `mordn-conformance-${revision}-`));
          outputDirs.push(outputDir);
          const url = `${gateway.url}/v1/sandbox/mcp`;
          results.set(revision, await runConformance(required(install), { url, revision, outputDir }));
        }),
      );
    }, 120_000);
    afterAll(async () => {
      for (const outputDir of outputDirs) await rm(outputDir, { recursive: true, force: true });
      await gateway?.close();
      await service?.close();
    });

    describe.each<ConformanceRevision>(['2025-11-25', '2026-07-28'])('revision %s', (revision) => {
      it('runs exactly the scenarios listed here as applicable or not applicable', () => {
        const ran = [...(results.get(revision)?.keys() ?? [])].sort();
        const listed = [...Object.keys(APPLICABLE[revision]), ...Object.keys(NOT_APPLICABLE[revision])].sort();
        expect(ran).toEqual(listed);
      });

      it.each(Object.entries(APPLICABLE[revision]))('passes %s', (scenario, knownFailures) => {
        const checks = results.get(revision)?.get(scenario) ?? [];
        expect(checks.some((check) => check.status === 'SUCCESS')).toBe(true);
        expect(failedChecks(checks).map((line) => line.split(':')[0])).toEqual(knownFailures);
      });
    });

    it('sends the modern scenarios on the 2026-07-28 wire and the legacy ones with initialize', () => {
      const methods = gateway.requests.flatMap(jsonRpcMethods);
      expect(methods).toContain('initialize');
      expect(methods).toContain('server/discover');
      const modern = gateway.requests.filter(
        (request) => request.headers['mcp-protocol-version'] === MODERN_PROTOCOL_VERSION,
      );
      expect(modern.flatMap(jsonRpcMethods)).toContain('tools/list');
    });
  },
);

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the MCP clients are not installed');
  return value;
}
