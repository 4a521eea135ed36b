import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Json } from './json.js';
import { INITIALIZE, toolCall } from './mcp.js';

/** What a test needs from an MCP client, whatever protocol revision it speaks. */
export interface EraClient {
  listToolNames(): Promise<string[]>;
  /** A tool call's decoded result and whether it was an error result. */
  callTool(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; value: Json }>;
  close(): Promise<void>;
}

/**
 * One MCP protocol era the endpoint serves, as tests drive it: a real client (connected with
 * nothing but the given headers) and the raw JSON-RPC bodies of a discovery request and a call.
 * Suites run once per era (`describe.each(MCP_ERAS)`), so another revision joins by adding one.
 */
export interface McpEra {
  name: string;
  connect(mcpUrl: string, headers: Record<string, string>): Promise<EraClient>;
  /** A discovery request (read permission only). */
  discovery(): unknown;
  /** A `tools/call` request. */
  call(name: string, args: Record<string, unknown>): unknown;
}

/** The legacy handshake era (`initialize`, protocol 2025-11-25), driven by the SDK v1 client. */
export const LEGACY_ERA: McpEra = {
  name: 'legacy handshake (2025-11-25, SDK v1 client)',
  async connect(mcpUrl, headers) {
    const client = new Client({ name: 'mordn-token-tests', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
    return {
      listToolNames: async () => (await client.listTools()).tools.map((tool) => tool.name),
      callTool: async (name, args) => {
        const result = await client.callTool({ name, arguments: args });
        const text = (result.content as Array<{ type: string; text?: string }>).find(
          (part) => part.type === 'text',
        )?.text;
        return { isError: result.isError === true, value: text ? JSON.parse(text) : result.structuredContent };
      },
      close: () => client.close(),
    };
  },
  discovery: () => INITIALIZE,
  call: (name, args) => toolCall(name, args),
};

export const MCP_ERAS: readonly McpEra[] = [LEGACY_ERA];
