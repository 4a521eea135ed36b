import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Json } from './json.js';
import type { TestService } from './service.js';
import { agentHeaders } from './service.js';

/** The official MCP SDK client, connected to the service's sandbox endpoint as `userId`. */
export async function connectSdkClient(
  service: Pick<TestService, 'url'>,
  key: string,
  userId = 'user-1',
): Promise<Client> {
  const client = new Client({ name: 'mordn-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.url}/v1/sandbox/mcp`), {
    requestInit: { headers: agentHeaders(key, userId) },
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its structured result plus whether it was an error. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: { signal?: AbortSignal } = {},
): Promise<{ isError: boolean; value: Json }> {
  const result = await client.callTool({ name, arguments: args }, undefined, {
    ...(options.signal ? { signal: options.signal } : {}),
    timeout: 130_000,
  });
  const text = (result.content as Array<{ type: string; text?: string }>).find((part) => part.type === 'text')?.text;
  return { isError: result.isError === true, value: text ? JSON.parse(text) : result.structuredContent };
}

/** One raw JSON-RPC request, for what clients would never send (batches, odd origins…). */
export function rawMcp(
  service: Pick<TestService, 'fetch'>,
  key: string,
  body: unknown,
  options: { userId?: string; headers?: Record<string, string>; method?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  return service.fetch('/v1/sandbox/mcp', {
    method: options.method ?? 'POST',
    headers: {
      ...agentHeaders(key, options.userId ?? 'user-1'),
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...options.headers,
    },
    ...(options.method === 'GET' || options.method === 'DELETE' ? {} : { body: JSON.stringify(body) }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** The six sandbox tools in their listing order, as the contract fixes them (spelled out, not imported). */
export const SANDBOX_TOOLS = [
  'sandbox_exec',
  'sandbox_list_files',
  'sandbox_read_file',
  'sandbox_write_file',
  'sandbox_import_file',
  'sandbox_publish_file',
];

export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

export function toolCall(name: string, args: Record<string, unknown>, id = 2) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}
