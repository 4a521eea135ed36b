import { type CallToolResult, validateJSONRPCMessage } from '@ai-sdk/mcp';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { z } from 'zod';
import type { LiveOutputPiece } from './live-output.js';

/**
 * The protocol revision of a call unless told otherwise: the legacy handshake era's latest, which
 * `@ai-sdk/mcp` negotiates with the API (the endpoint is stateless: a call needs no handshake).
 */
const DEFAULT_PROTOCOL_VERSION = '2025-11-25';
/** The one request of the exchange, and the token its progress notifications carry. */
const REQUEST_ID = 1;
const PROGRESS_TOKEN = 1;

/**
 * A tool result as `@ai-sdk/mcp` hands it to the AI SDK: the same loose shape, with `isError`
 * defaulting to false, so the model and the stored answer see the same value from either caller.
 */
const ToolResult = z
  .object({
    _meta: z.optional(z.object({}).loose()),
    content: z.array(z.object({ type: z.string() }).loose()),
    structuredContent: z.optional(z.unknown()),
    isError: z.boolean().default(false).optional(),
  })
  .loose();

/** A `notifications/progress` of the call: live output of one stream. */
const ProgressNotification = z.object({
  method: z.literal('notifications/progress'),
  params: z.object({
    progressToken: z.literal(PROGRESS_TOKEN),
    message: z.string().optional(),
    _meta: z.object({ 'mordn/stream': z.enum(['stdout', 'stderr']) }).loose(),
  }),
});

export interface ProgressCallOptions {
  /** The API's fetch (origin, paths and bounds already enforced). */
  fetch: typeof fetch;
  url: string;
  /** The call's credentials and identity, as every MCP request of the integration sends them. */
  headers: Record<string, string>;
  /** The revision the integration's MCP client negotiated; default 2025-11-25. */
  protocolVersion?: string;
  name: string;
  args: unknown;
  /** Aborting it ends the HTTP exchange, which kills the command in the sandbox. */
  signal: AbortSignal;
  onOutput(piece: LiveOutputPiece): void;
}

/** The JSON-RPC response to the call: its result as `@ai-sdk/mcp` would return it, or the error it would throw. */
function toolResultOf(message: unknown): CallToolResult {
  const response = validateJSONRPCMessage(message);
  if ('error' in response) throw new Error(response.error.message);
  if (!('result' in response)) throw new Error('MCP HTTP Transport Error: the call was answered with no result');
  return ToolResult.parse(response.result) as CallToolResult;
}

/**
 * One `tools/call` over MCP's Streamable HTTP asking for progress (`params._meta.progressToken`):
 * the answer, JSON or an event stream, is read as it arrives; each progress notification's
 * message goes to `onOutput` with its stream, and the call resolves with the result. HTTP and
 * JSON-RPC failures reject with the messages `@ai-sdk/mcp` uses. Never retried.
 *
 * @example
 * const result = await callToolWithProgress({ fetch: apiFetch, url, headers, name: 'sandbox_exec',
 *   args: { command: 'make test' }, signal, onOutput: ({ stream, text }) => console.log(stream, text) });
 */
export async function callToolWithProgress(options: ProgressCallOptions): Promise<CallToolResult> {
  options.signal.throwIfAborted();
  const response = await options.fetch(options.url, {
    method: 'POST',
    headers: {
      ...options.headers,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'mcp-protocol-version': options.protocolVersion ?? DEFAULT_PROTOCOL_VERSION,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: REQUEST_ID,
      method: 'tools/call',
      params: { name: options.name, arguments: options.args, _meta: { progressToken: PROGRESS_TOKEN } },
    }),
    redirect: 'error',
    signal: options.signal,
  });
  if (!response.ok) {
    const text = await response.text().catch(() => null);
    throw new Error(`MCP HTTP Transport Error: POSTing to endpoint (HTTP ${response.status}): ${text}`);
  }
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.includes('application/json')) return toolResultOf(await response.json());
  if (!contentType.includes('text/event-stream') || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    throw new Error(`MCP HTTP Transport Error: Unexpected content type: ${contentType}`);
  }
  let result: CallToolResult | undefined;
  // Read to the end (the stream closes right after the result), so the connection can be reused.
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  for await (const { event, data } of events) {
    if (event !== undefined && event !== 'message') continue;
    const message = JSON.parse(data) as { id?: unknown };
    if (message.id === REQUEST_ID) result ??= toolResultOf(message);
    const progress = result ? undefined : ProgressNotification.safeParse(message);
    if (progress?.success && progress.data.params.message) {
      options.onOutput({ stream: progress.data.params._meta['mordn/stream'], text: progress.data.params.message });
    }
  }
  if (!result) throw new Error('MCP HTTP Transport Error: the event stream ended before the result');
  return result;
}
