import {
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { Logger } from '../logger.js';

/** The server prepared for each request the modern handler is serving (its factory's only input). */
const serversByRequest = new WeakMap<Request, McpServer>();

/**
 * The SDK's handler for 2026-07-28 requests (per-request `_meta` envelope, `server/discover`, the
 * header rules and the revision's error codes). It owns nothing between requests: each one is
 * answered by the server prepared for it, and 2025-era requests never reach it.
 */
export function createModernEraHandler(options: { logger: Logger; maxRequestBodySize: number }): McpHttpHandler {
  return createMcpHandler(
    ({ requestInfo }) => {
      const server = requestInfo && serversByRequest.get(requestInfo);
      if (!server) throw new Error('No sandbox MCP server was prepared for this request.');
      return server;
    },
    {
      legacy: 'reject',
      // The default 'auto' answers with one JSON body unless a handler sends a message before its
      // result: only live output of `sandbox_exec` does, and then the answer is an event stream.
      maxRequestBodySize: options.maxRequestBodySize,
      onerror: (error) => options.logger.debug({ err: error }, 'sandbox MCP request refused'),
    },
  );
}

/** Whether a response is an event stream (the SDK's answer to a request whose handler sent notifications). */
export function isEventStream(response: Response): boolean {
  return (response.headers.get('Content-Type') ?? '').startsWith('text/event-stream');
}

/**
 * One request of either era, on one server built for it: a 2025-era request (the `initialize`
 * handshake and what follows it, no `_meta` envelope) over the stateless Streamable HTTP
 * transport, a 2026-07-28 one through the SDK's modern handler. The SDK classifies the era. A
 * legacy request answers one JSON body, unless `eventStream` is set: then an event stream, which
 * carries the notifications the handler sends before its result.
 */
export async function serveMcpRequest(
  request: Request,
  message: unknown,
  server: McpServer,
  modern: McpHttpHandler,
  options: { eventStream: boolean },
): Promise<Response> {
  if (await isLegacyRequest(request, message)) {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !options.eventStream,
    });
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: message });
  }
  serversByRequest.set(request, server);
  return modern.fetch(request, { parsedBody: message });
}

/**
 * An event-stream response passed on once its first chunk is there (by then the handler has either
 * started its work or failed), calling `onDone` once the stream is over: sent to its end, cancelled
 * by a client that went away, or failed.
 */
export async function relayEventStream(response: Response, onDone: () => void): Promise<Response> {
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    onDone();
  };
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let first: Awaited<ReturnType<typeof reader.read>> | undefined;
  try {
    first = await reader.read();
  } catch (error) {
    finish();
    throw error;
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = first ?? (await reader.read());
        first = undefined;
        if (next.done) {
          controller.close();
          finish();
        } else controller.enqueue(next.value);
      } catch (error) {
        controller.error(error);
        finish();
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
