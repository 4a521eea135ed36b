import type { Json } from './json.js';
import { rawMcp } from './mcp.js';
import type { EraRequest } from './mcp-eras.js';
import type { TestService } from './service.js';

/** One message of a response, when it arrived and what its frame took on the wire. */
export interface ExchangedMessage {
  /** Milliseconds since the request was sent. */
  at: number;
  /** Bytes of its event (`event: message\ndata: …\n\n`), or of the whole body when it came as JSON. */
  frameBytes: number;
  message: Json;
}

/** A raw exchange with the MCP endpoint: the exact body bytes and the messages it carried, timed. */
export interface Exchange {
  status: number;
  contentType: string;
  body: Buffer;
  messages: ExchangedMessage[];
  /** The notifications (everything before the response). */
  notifications: ExchangedMessage[];
  /** The JSON-RPC response: the last message. */
  response: Json;
}

const EVENT_END = Buffer.from('\n\n');

/** `request` with `params._meta.progressToken` added (its era's envelope kept). */
export function withProgressToken(request: EraRequest, progressToken: string | number): EraRequest {
  const params = request.body.params as Record<string, unknown>;
  return {
    ...request,
    body: {
      ...request.body,
      params: { ...params, _meta: { ...(params._meta as Record<string, unknown> | undefined), progressToken } },
    },
  };
}

/**
 * Sends one raw request and reads the answer as it arrives: a JSON body is one message; an event
 * stream is split into its events, each timed when its last byte came in. `onMessage` sees each as
 * it comes (to abort mid-stream, say).
 */
export async function exchangeMcp(
  service: Pick<TestService, 'fetch'>,
  key: string,
  request: EraRequest,
  options: { userId?: string; signal?: AbortSignal; onMessage?: (message: ExchangedMessage) => void } = {},
): Promise<Exchange> {
  const started = performance.now();
  const response = await rawMcp(service, key, request.body, {
    headers: request.headers,
    userId: options.userId ?? 'user-1',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const contentType = response.headers.get('content-type') ?? '';
  const chunks: Buffer[] = [];
  const messages: ExchangedMessage[] = [];
  const take = (message: ExchangedMessage) => {
    messages.push(message);
    options.onMessage?.(message);
  };
  let pending = Buffer.alloc(0);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = Buffer.from(value);
    chunks.push(chunk);
    if (!contentType.startsWith('text/event-stream')) continue;
    pending = Buffer.concat([pending, chunk]);
    for (let end = pending.indexOf(EVENT_END); end >= 0; end = pending.indexOf(EVENT_END)) {
      const event = pending.subarray(0, end + EVENT_END.length);
      pending = pending.subarray(end + EVENT_END.length);
      const data = event
        .toString('utf8')
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice('data: '.length))
        .join('\n');
      if (data === '') continue;
      take({ at: performance.now() - started, frameBytes: event.length, message: JSON.parse(data) });
    }
  }
  const body = Buffer.concat(chunks);
  if (!contentType.startsWith('text/event-stream') && body.length > 0) {
    take({ at: performance.now() - started, frameBytes: body.length, message: JSON.parse(body.toString('utf8')) });
  }
  return {
    status: response.status,
    contentType,
    body,
    messages,
    notifications: messages.filter((entry) => entry.message.method === 'notifications/progress'),
    response: messages.at(-1)?.message,
  };
}

/** The output a call's notifications carried, per stream (their messages put together). */
export function liveOutput(notifications: ExchangedMessage[], stream: 'stdout' | 'stderr'): string {
  return notifications
    .filter((entry) => entry.message.params._meta['mordn/stream'] === stream)
    .map((entry) => entry.message.params.message)
    .join('');
}
