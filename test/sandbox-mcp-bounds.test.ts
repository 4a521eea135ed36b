import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequestContext } from '../src/chat/types.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { TRUNCATION_MARKER } from '../src/mcp/bounded-tool-result.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { rawMcp, toolCall } from './support/mcp.js';
import { type EraRequest, MCP_ERAS, MODERN_ERA } from './support/mcp-eras.js';
import { startTestService, type TestService } from './support/service.js';
import { finalValue } from './support/tool-execution.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const MIB = 1024 * 1024;
/** Lines of text with quotes and newlines (each costs more than a byte once escaped), 1,000,000 bytes. */
const TEXT_LINE = 'row "quoted" value\n';
const TEXT_FILE = TEXT_LINE.repeat(Math.ceil(1_000_000 / TEXT_LINE.length)).slice(0, 1_000_000);
/** 3,000 files, each a long name of control and two-byte characters (up to 255 bytes). */
const LONG_NAMES = new Set(
  Array.from({ length: 3000 }, (_, index) => `${'\u0001'.repeat(100)}${'é'.repeat(70)}${index}`),
);
/** Makes the files of the cases, in the workspace. */
const SETUP_SCRIPT = [
  'import os',
  `line = ${JSON.stringify(TEXT_LINE)}`,
  "open('text.txt', 'w').write((line * (1000000 // len(line) + 1))[:1000000])",
  "open('control.txt', 'w').write(chr(1) * 1000000)",
  "os.mkdir('many')",
  "for index in range(3000): open('many/' + chr(1) * 100 + chr(0xe9) * 70 + str(index), 'w').close()",
].join('\n');

/** The four cases, each far larger than one response once escaped. */
const CASES = [
  ['a 1,000,000-byte text file read', 'sandbox_read_file', { path: 'text.txt' }],
  ['a file of control bytes read', 'sandbox_read_file', { path: 'control.txt' }],
  ['3,000 long file names listed', 'sandbox_list_files', { path: 'many' }],
  ['NUL-laden stdout', 'sandbox_exec', { command: 'head -c 1000000 /dev/zero' }],
] as const;

interface Deployment {
  service: TestService;
  fixture: AgentFixture;
  /** What a whole HTTP response body may take. */
  bound: number;
}
let deployments: Record<'default' | 'lowered', Deployment>;

async function deploy(environment: Record<string, string>, bound: number): Promise<Deployment> {
  const service = await startTestService({
    environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000', ...environment },
  });
  const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  const call = (tool: string, args: Record<string, unknown>) =>
    rawMcp(service, fixture.key, toolCall(tool, args), { userId: 'alice' }).then(readJson);
  expect(
    (await call('sandbox_write_file', { path: 'setup.py', content: SETUP_SCRIPT })).result.isError,
  ).toBeUndefined();
  const made = await call('sandbox_exec', { command: 'python3 setup.py' });
  expect(made.result.structuredContent, JSON.stringify(made)).toMatchObject({ exitCode: 0 });
  return { service, fixture, bound };
}

beforeAll(async () => {
  deployments = {
    default: await deploy({}, MIB),
    lowered: await deploy({ MORDN_SANDBOX_MAX_OUTPUT_BYTES: '16384' }, 16_384 + 4096),
  };
}, 60_000);
afterAll(async () => {
  await deployments?.default.service.close();
  await deployments?.lowered.service.close();
});

/** The one JSON-RPC message of a body, whether it came as JSON or as an event stream. */
function messageOf(contentType: string, body: Buffer): Json {
  if (contentType.startsWith('application/json')) return JSON.parse(body.toString('utf8'));
  expect(contentType).toMatch(/^text\/event-stream/);
  const data = body
    .toString('utf8')
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .filter((line) => line.length > 0);
  expect(data).toHaveLength(1);
  return JSON.parse(data[0] as string);
}

/** Checks a truncated result of one case: its payload is a marked prefix, or whole leading items. */
function expectTruncated(tool: string, value: Json): void {
  expect(value.truncated).toBe(true);
  if (tool === 'sandbox_read_file') {
    const content = value.content as string;
    expect(content.endsWith(TRUNCATION_MARKER)).toBe(true);
    const kept = content.slice(0, -TRUNCATION_MARKER.length);
    const expected = value.path === 'text.txt' ? TEXT_FILE : '\u0001'.repeat(1_000_000);
    expect(expected.startsWith(kept)).toBe(true);
    expect(kept.length).toBeGreaterThan(1000);
  } else if (tool === 'sandbox_list_files') {
    expect(value.entries.length).toBeGreaterThan(0);
    for (const entry of value.entries) expect(LONG_NAMES.has(entry.name)).toBe(true);
  } else {
    expect(value.exitCode).toBe(0);
    expect(value.stdout.endsWith(TRUNCATION_MARKER)).toBe(true);
    const kept = value.stdout.slice(0, -TRUNCATION_MARKER.length);
    expect(kept).toBe('\u0000'.repeat(kept.length));
  }
}

describe.each(['default', 'lowered'] as const)('tool responses on the wire (%s output limit)', (name) => {
  /** A legacy call with a version header, as clients of that revision send it. */
  const legacyWith =
    (headers: Record<string, string>) =>
    (tool: string, args: Record<string, unknown>): EraRequest => ({ body: toolCall(tool, args), headers });
  describe.each([
    ['legacy, no version header', legacyWith({})],
    ['legacy 2025-03-26', legacyWith({ 'Mcp-Protocol-Version': '2025-03-26' })],
    ['legacy 2025-06-18', legacyWith({ 'Mcp-Protocol-Version': '2025-06-18' })],
    [
      'legacy 2025-11-25, event stream preferred',
      legacyWith({ 'Mcp-Protocol-Version': '2025-11-25', Accept: 'text/event-stream, application/json' }),
    ],
    ['2026-07-28', (tool: string, args: Record<string, unknown>) => MODERN_ERA.call(tool, args)],
    [
      '2026-07-28, event stream preferred',
      (tool: string, args: Record<string, unknown>) => {
        const request = MODERN_ERA.call(tool, args);
        return { ...request, headers: { ...request.headers, Accept: 'text/event-stream, application/json' } };
      },
    ],
  ])('protocol: %s', (_era, requestOf: (tool: string, args: Record<string, unknown>) => EraRequest) => {
    it.each(CASES)('%s comes back truncated and marked, within the bound', async (_label, tool, args) => {
      const { service, fixture, bound } = deployments[name];
      const request = requestOf(tool, args);
      const response = await rawMcp(service, fixture.key, request.body, { userId: 'alice', headers: request.headers });
      expect(response.status).toBe(200);
      const body = Buffer.from(await response.arrayBuffer());
      expect(body.length).toBeLessThanOrEqual(bound);
      const message = messageOf(response.headers.get('content-type') ?? '', body);
      expect(message.error).toBeUndefined();
      expect(message.result.isError).toBeUndefined();
      const [text] = message.result.content;
      expectTruncated(tool, JSON.parse(text.text));
      // Past the bound the value is carried once, as text.
      expect(message.result.structuredContent).toBeUndefined();
    });
  });

  it.each(MCP_ERAS)('refuses a JSON-RPC id too long to echo within the bound ($name)', async (era) => {
    const { service, fixture } = deployments[name];
    const request = era.call('sandbox_exec', { command: 'true' }, 'i'.repeat(300));
    const response = await rawMcp(service, fixture.key, request.body, { userId: 'alice', headers: request.headers });
    expect(response.status).toBe(400);
    expect((await readJson(response)).error).toEqual({
      code: -32600,
      message: 'Invalid request: the id may be at most 256 bytes of JSON.',
    });
  });

  it('lets createHostedSandboxes read every such response', async () => {
    const { service, fixture } = deployments[name];
    const sandboxes = createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: service.deps.selfBaseUrl as string });
    const context: ChatRequestContext = {
      request: new Request('http://host.example/api/chat'),
      userId: 'alice',
      chatId: 'c1',
      config: ENABLED,
      abortSignal: new AbortController().signal,
    };
    const built = await sandboxes.buildTools(context, {
      abortSignal: new AbortController().signal,
      onArtifact: () => undefined,
    });
    try {
      for (const [label, tool, args] of CASES) {
        const result = (await finalValue(
          built.tools[tool]?.execute?.(args, {
            toolCallId: label,
            messages: [],
            abortSignal: new AbortController().signal,
          }),
        )) as Json;
        expect(result.isError === true, label).toBe(false);
        expectTruncated(tool, JSON.parse(result.content[0].text));
      }
    } finally {
      await built.close();
    }
  });
});
