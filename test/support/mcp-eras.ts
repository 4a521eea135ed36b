import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Json } from './json.js';
import { INITIALIZE, rawMcp, toolCall } from './mcp.js';
import { agentHeaders, type TestService } from './service.js';

/** What a test needs from an MCP client, whatever protocol revision it speaks. */
/** A listed tool, as much of it as tests look at. */
export interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: { properties?: Record<string, unknown> | undefined; additionalProperties?: unknown };
}

/** What a client hands its progress callback: the notification's params, the token aside. */
export interface ProgressParams {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
  _meta?: Record<string, unknown> | undefined;
}

export interface EraClient {
  listTools(): Promise<ListedTool[]>;
  listToolNames(): Promise<string[]>;
  /**
   * A tool call's decoded result and whether it was an error result. With `onprogress`, the call
   * carries a progress token and each `notifications/progress` for it is handed over.
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    options?: { signal?: AbortSignal; onprogress?: (progress: ProgressParams) => void },
  ): Promise<{ isError: boolean; value: Json }>;
  close(): Promise<void>;
}

/** A JSON-RPC request as one raw HTTP exchange sends it: the body and the headers the era adds. */
export interface EraRequest {
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * One MCP protocol era the endpoint serves, as tests drive it: a real client (connected with
 * nothing but the given headers) and the raw requests of discovery and of a call, shaped as that
 * era's clients send them. Suites run once per era (`describe.each(MCP_ERAS)`), so another
 * revision joins by adding one.
 */
export interface McpEra {
  name: string;
  /** `legacy` or `modern`, for the few assertions on what differs on the wire. */
  kind: 'legacy' | 'modern';
  connect(mcpUrl: string, headers: Record<string, string>): Promise<EraClient>;
  /** A discovery request (read permission only). */
  discovery(): EraRequest;
  /** A `tools/call` request. */
  call(name: string, args: Record<string, unknown>, id?: unknown): EraRequest;
  /** Any other request of the era (its envelope and headers added). */
  request(method: string, params: Record<string, unknown>, id?: unknown): EraRequest;
}

type SdkToolResult = { content?: unknown; structuredContent?: unknown; isError?: unknown };

function decodeToolResult(result: SdkToolResult): { isError: boolean; value: Json } {
  const text = (result.content as Array<{ type: string; text?: string }>).find((part) => part.type === 'text')?.text;
  return { isError: result.isError === true, value: text ? JSON.parse(text) : (result.structuredContent as Json) };
}

/** Long enough for the slowest tool a suite runs (a command at its maximum timeout). */
const CALL_TIMEOUT_MS = 130_000;

/** The legacy handshake era (`initialize`, protocol 2025-11-25), driven by the SDK v1 client. */
export const LEGACY_ERA: McpEra = {
  name: 'legacy handshake (2025-11-25, SDK v1 client)',
  kind: 'legacy',
  async connect(mcpUrl, headers) {
    const client = new Client({ name: 'mordn-tests', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
    return {
      listTools: async () => (await client.listTools()).tools,
      listToolNames: async () => (await client.listTools()).tools.map((tool) => tool.name),
      callTool: async (name, args, options = {}) =>
        decodeToolResult(
          (await client.callTool({ name, arguments: args }, undefined, {
            ...options,
            timeout: CALL_TIMEOUT_MS,
          })) as SdkToolResult,
        ),
      close: () => client.close(),
    };
  },
  discovery: () => ({ body: INITIALIZE, headers: {} }),
  call: (name, args, id = 2) => ({ body: toolCall(name, args, id as number), headers: {} }),
  request: (method, params, id = 3) => ({ body: { jsonrpc: '2.0', id, method, params }, headers: {} }),
};

export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** The per-request envelope every 2026-07-28 request carries in `params._meta`. */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

function modernRequest(method: string, params: Record<string, unknown>, id: unknown, name?: string): EraRequest {
  return {
    body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: MODERN_META } },
    headers: {
      'MCP-Protocol-Version': MODERN_PROTOCOL_VERSION,
      'Mcp-Method': method,
      ...(name === undefined ? {} : { 'Mcp-Name': name }),
    },
  };
}

/** The stateless 2026-07-28 era (`server/discover`, per-request `_meta`), driven by the SDK v2 client. */
export const MODERN_ERA: McpEra = {
  name: 'stateless 2026-07-28 (SDK v2 client)',
  kind: 'modern',
  async connect(mcpUrl, headers) {
    const client = new ClientV2(
      { name: 'mordn-tests', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: MODERN_PROTOCOL_VERSION } } },
    );
    await client.connect(new TransportV2(new URL(mcpUrl), { requestInit: { headers } }));
    return {
      listTools: async () => (await client.listTools()).tools,
      listToolNames: async () => (await client.listTools()).tools.map((tool) => tool.name),
      callTool: async (name, args, options = {}) =>
        decodeToolResult(
          (await client.callTool({ name, arguments: args }, { ...options, timeout: CALL_TIMEOUT_MS })) as SdkToolResult,
        ),
      close: () => client.close(),
    };
  },
  discovery: () => modernRequest('server/discover', {}, 1),
  call: (name, args, id = 2) => modernRequest('tools/call', { name, arguments: args }, id, name),
  request: (method, params, id = 3) =>
    modernRequest(method, params, id, typeof params.name === 'string' ? params.name : undefined),
};

export const MCP_ERAS: readonly McpEra[] = [LEGACY_ERA, MODERN_ERA];

/** A real client of `era` on the service's sandbox endpoint, as `userId` of the key's agent. */
export function connectEra(
  era: McpEra,
  service: Pick<TestService, 'url'>,
  key: string,
  userId = 'user-1',
): Promise<EraClient> {
  return era.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(key, userId));
}

/** One raw request of an era (its body and headers), as `rawMcp` sends it. */
export function rawEraMcp(
  service: Pick<TestService, 'fetch'>,
  key: string,
  request: EraRequest,
  options: Parameters<typeof rawMcp>[3] = {},
): Promise<Response> {
  return rawMcp(service, key, request.body, { ...options, headers: { ...request.headers, ...options.headers } });
}
