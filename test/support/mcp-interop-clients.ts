import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { Json } from './json.js';
import type { EraClient, McpEra } from './mcp-eras.js';
import { type McpClientsInstall, runNode } from './mcp-interop-install.js';

/** One tool call of a walkthrough. Arguments are strings only, so every client can pass them as typed. */
export interface PlannedCall {
  tool: string;
  args: Record<string, string>;
}

/** A tool call's decoded result and whether it was an error result. */
export interface ToolOutcome {
  isError: boolean;
  value: Json;
}

/** What a client saw: the tools it listed and each planned call's outcome, in order. */
export interface PlanRun {
  tools: string[];
  outcomes: ToolOutcome[];
}

/**
 * A real MCP client of some era that can list the tools and run a list of calls on one endpoint,
 * sending only the given headers: in this process, or as a process of its own on Node 22.
 */
export interface InteropClient {
  name: string;
  /** The era it must land on, checked on the wire. */
  kind: 'legacy' | 'modern';
  run(mcpUrl: string, headers: Record<string, string>, calls: PlannedCall[]): Promise<PlanRun>;
}

/** A CallToolResult as clients hand it back (and the Inspector CLI prints it). */
export interface CallToolResult {
  content?: Array<{ type: string; text?: string }>;
  structuredContent?: unknown;
  isError?: boolean;
}

/** The result's JSON text block (what a model reads), parsed; its structured content otherwise. */
export function decodeCallToolResult(result: CallToolResult): ToolOutcome {
  const text = result.content?.find((part) => part.type === 'text')?.text;
  return { isError: result.isError === true, value: text ? JSON.parse(text) : (result.structuredContent as Json) };
}

/** An in-process client of one of the suite's eras (SDK v1 for legacy, SDK v2 pinned for modern). */
export function eraClient(era: McpEra, name: string): InteropClient {
  return { name, kind: era.kind, run: (url, headers, calls) => runOnEraClient(era.connect(url, headers), calls) };
}

async function runOnEraClient(connecting: Promise<EraClient>, calls: PlannedCall[]): Promise<PlanRun> {
  const client = await connecting;
  try {
    const tools = await client.listToolNames();
    const outcomes: ToolOutcome[] = [];
    for (const call of calls) outcomes.push(await client.callTool(call.tool, call.args));
    return { tools, outcomes };
  } finally {
    await client.close();
  }
}

/**
 * The SDK v2 client in `auto` negotiation mode: it probes with `server/discover` and falls back
 * to `initialize` only for a legacy server. `onNegotiated` receives the revision it settled on.
 */
export function sdkV2AutoClient(onNegotiated: (version: string | undefined) => void): InteropClient {
  return {
    name: 'SDK v2 client, auto negotiation',
    kind: 'modern',
    run: async (url, headers, calls) => {
      const client = new ClientV2(
        { name: 'mordn-interop', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto' } },
      );
      await client.connect(new TransportV2(new URL(url), { requestInit: { headers } }));
      onNegotiated(client.getNegotiatedProtocolVersion());
      try {
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        const outcomes: ToolOutcome[] = [];
        for (const call of calls) {
          outcomes.push(
            decodeCallToolResult((await client.callTool({ name: call.tool, arguments: call.args })) as CallToolResult),
          );
        }
        return { tools, outcomes };
      } finally {
        await client.close();
      }
    },
  };
}

export type InspectorEra = 'modern' | 'auto' | 'legacy';

/** The Inspector CLI's arguments for one request, after `--cli` and the connection flags. */
export type InspectorRequest =
  | { method: 'tools/list' }
  | { method: 'tools/call'; tool: string; args: Record<string, string> }
  | { method: 'tools/call'; tool: string; argsJson: Record<string, unknown> };

function inspectorRequestArgs(request: InspectorRequest): string[] {
  if (request.method === 'tools/list') return ['--method', 'tools/list'];
  const base = ['--method', 'tools/call', '--tool-name', request.tool];
  if ('argsJson' in request) return [...base, '--tool-args-json', JSON.stringify(request.argsJson)];
  return [...base, ...Object.entries(request.args).flatMap(([key, value]) => ['--tool-arg', `${key}=${value}`])];
}

/**
 * Runs the MCP Inspector CLI once (it connects, sends one request and exits) with
 * `--protocol-era <era>`, and returns its exit code and the JSON it printed. Its HOME is `home`,
 * so the catalog it keeps under ~/.mcp-inspector stays out of the real one.
 */
export async function runInspector(
  install: McpClientsInstall,
  options: { era: InspectorEra; url: string; headers: Record<string, string>; home: string; request: InspectorRequest },
): Promise<{ code: number | null; output: unknown; stderr: string }> {
  const args = [
    install.inspectorBin,
    '--cli',
    '--protocol-era',
    options.era,
    '--server-url',
    options.url,
    '--transport',
    'http',
    '--connect-timeout',
    '15000',
    ...Object.entries(options.headers).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    ...inspectorRequestArgs(options.request),
  ];
  const run = await runNode(install, args, { environment: { HOME: options.home }, timeoutMs: 45_000 });
  if (run.timedOut) throw new Error(`the Inspector CLI did not exit within 45 s: ${run.stderr}`);
  let output: unknown;
  try {
    output = JSON.parse(run.stdout);
  } catch {
    throw new Error(`the Inspector CLI printed no JSON (exit ${run.code}): ${run.stdout}${run.stderr}`);
  }
  return { code: run.code, output, stderr: run.stderr };
}

/** A temporary HOME for the Inspector CLI, and its removal. */
export async function inspectorHome(): Promise<{ home: string; remove(): Promise<void> }> {
  const home = await mkdtemp(path.join(tmpdir(), 'mordn-inspector-'));
  return { home, remove: () => rm(home, { recursive: true, force: true }) };
}

/**
 * The MCP Inspector CLI in one protocol era as an interop client: one process for `tools/list`
 * and one per call (that is how the CLI works). Tool arguments go through `--tool-arg key=value`,
 * which the CLI types by JSON-parsing the value; the walkthrough's values are all text that does
 * not parse as JSON, so they arrive as strings. `auto` must land on the modern era.
 */
export function inspectorClient(install: McpClientsInstall, era: InspectorEra, home: string): InteropClient {
  return {
    name: `MCP Inspector CLI, --protocol-era ${era}`,
    kind: era === 'legacy' ? 'legacy' : 'modern',
    run: async (url, headers, calls) => {
      const inspect = (request: InspectorRequest) => runInspector(install, { era, url, headers, home, request });
      const listed = await inspect({ method: 'tools/list' });
      if (listed.code !== 0) throw new Error(`tools/list exited ${listed.code}: ${listed.stderr}`);
      const tools = (listed.output as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name);
      const outcomes: ToolOutcome[] = [];
      for (const call of calls) {
        const called = await inspect({ method: 'tools/call', tool: call.tool, args: call.args });
        const outcome = decodeCallToolResult(called.output as CallToolResult);
        // The CLI exits 0 for a result and 5 for an error result; anything else is its own failure.
        const expected = outcome.isError ? 5 : 0;
        if (called.code !== expected) throw new Error(`${call.tool} exited ${called.code}: ${called.stderr}`);
        outcomes.push(outcome);
      }
      return { tools, outcomes };
    },
  };
}

const AI_SDK_SCRIPT = fileURLToPath(new URL('../fixtures/mcp-clients/ai-sdk-mcp.mjs', import.meta.url));

/**
 * @ai-sdk/mcp of AI SDK 7 as an interop client: `createMCPClient` with the HTTP transport,
 * `tools()`, and each tool's `execute`, in one Node 22 process (the script under
 * test/fixtures/mcp-clients). It proposes 2025-11-25, so it lands on the legacy era.
 */
export function aiSdkClient(install: McpClientsInstall, onVersion: (version: string) => void): InteropClient {
  return {
    name: '@ai-sdk/mcp (AI SDK 7)',
    kind: 'legacy',
    run: async (url, headers, calls) => {
      const run = await runNode(install, [AI_SDK_SCRIPT, install.aiSdkDir], {
        stdin: JSON.stringify({ url, headers, calls }),
        timeoutMs: 60_000,
      });
      if (run.code !== 0) throw new Error(`the @ai-sdk/mcp script exited ${run.code}: ${run.stderr}`);
      const printed = JSON.parse(run.stdout) as {
        version: string;
        tools: string[];
        results: Array<{ tool: string; result?: CallToolResult; error?: string }>;
      };
      onVersion(printed.version);
      const outcomes = printed.results.map((entry) => {
        if (entry.result === undefined) throw new Error(`${entry.tool} failed in @ai-sdk/mcp: ${entry.error}`);
        return decodeCallToolResult(entry.result);
      });
      return { tools: printed.tools, outcomes };
    },
  };
}
