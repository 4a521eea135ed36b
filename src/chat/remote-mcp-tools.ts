import { createMCPClient } from '@ai-sdk/mcp';
import type { ToolSet } from 'ai';
import { createSsrfSafeFetch } from '../net/ssrf-fetch.js';
import type { BuiltTools } from './types.js';

/** A remote MCP server the host configures on the server side (never from a request). */
export interface RemoteMcpServer {
  url: string;
  headers?: Record<string, string>;
}

/**
 * Tools from the host's own remote MCP servers. Their HTTP goes through the SSRF-safe fetch:
 * HTTPS only, every resolved address checked (private, loopback, link-local, metadata… refused)
 * and the connection pinned to it, no redirects, bounded size and time. Tools named like the
 * reserved `sandbox_*` tools are dropped: only the managed integration may provide those.
 */
export async function createRemoteMcpTools(
  servers: readonly RemoteMcpServer[],
  options: { abortSignal: AbortSignal; reserved: ReadonlySet<string>; fetch?: typeof fetch },
): Promise<BuiltTools> {
  const safeFetch = options.fetch ?? createSsrfSafeFetch();
  const bound: typeof fetch = (input, init) =>
    safeFetch(input, {
      ...init,
      signal: init?.signal ? AbortSignal.any([init.signal, options.abortSignal]) : options.abortSignal,
    });
  const clients: Array<{ close(): Promise<void> }> = [];
  const close = async () => {
    await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  };
  try {
    const tools: ToolSet = {};
    for (const server of servers) {
      const client = await createMCPClient({
        transport: {
          type: 'http',
          url: server.url,
          ...(server.headers ? { headers: server.headers } : {}),
          redirect: 'error',
          fetch: bound,
        },
        maxRetries: 0,
      });
      clients.push(client);
      for (const [name, tool] of Object.entries(await client.tools())) {
        if (!options.reserved.has(name)) tools[name] = tool;
      }
    }
    return { tools, close };
  } catch (error) {
    await close();
    throw error;
  }
}
