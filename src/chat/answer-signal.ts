import { UI_MESSAGE_STREAM_HEADERS, type UIMessageChunk } from 'ai';
import { ServiceError } from '../errors.js';
import type { InterruptionReason } from './interrupted-message.js';

/** The one abort signal of an answer, and why it fired. */
export interface AnswerSignal {
  readonly signal: AbortSignal;
  /** Why the answer was cut short, once it was (the first cause wins). */
  readonly interruption: InterruptionReason | undefined;
  /** Ends the answer because its response lost its reader. */
  disconnect(): void;
  /** Ends the answer for `reason` (an explicit stop, a replica shutting down). */
  interrupt(reason: InterruptionReason): void;
  /** Stops the deadline and lets go of the request's signal. Safe to call more than once. */
  dispose(): void;
}

/**
 * One signal for setup, discovery and the whole answer, fired by the first of: the request's own
 * signal (`stop`), a response nobody reads any more (`disconnect`, see `answerResponse`) and
 * the deadline (`timeout`, aborting with a 502 `UPSTREAM_UNAVAILABLE` so setup can answer it).
 *
 * @example
 * const answer = createAnswerSignal(request, 120_000);
 * streamText({ model, messages, abortSignal: answer.signal });
 * // later: answer.interruption === 'stop' when the client aborted its fetch
 */
export function createAnswerSignal(
  request: Request,
  timeoutMs: number,
  options: { followRequest?: boolean } = {},
): AnswerSignal {
  const controller = new AbortController();
  let interruption: InterruptionReason | undefined;
  const interrupt = (reason: InterruptionReason, cause: unknown) => {
    if (controller.signal.aborted) return;
    interruption = reason;
    controller.abort(cause);
  };
  const timer = setTimeout(
    () => interrupt('timeout', new ServiceError('UPSTREAM_UNAVAILABLE', 'The answer took too long.')),
    timeoutMs,
  );
  // A resumable answer outlives its request: only an explicit stop ends it.
  const follow = options.followRequest !== false;
  const onStop = () => interrupt('stop', request.signal.reason);
  if (follow && request.signal.aborted) onStop();
  else if (follow) request.signal.addEventListener('abort', onStop, { once: true });
  return {
    signal: controller.signal,
    get interruption() {
      return interruption;
    },
    disconnect: () =>
      interrupt('disconnect', new DOMException('The response lost its reader before the answer ended.', 'AbortError')),
    interrupt: (reason) => interrupt(reason, new DOMException(`The answer was ended (${reason}).`, 'AbortError')),
    dispose: () => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onStop);
    },
  };
}

/** The SSE event of one chunk's JSON, as the AI SDK's `JsonToSseTransformStream` frames it. */
export function sseEvent(json: string): string {
  return `data: ${json}\n\n`;
}

/** The AI SDK's end-of-stream event, after the last chunk. */
export const SSE_DONE = 'data: [DONE]\n\n';

/**
 * The answer's UI message stream as an SSE response (the SDK's own headers and framing: one
 * `data: <chunk JSON>` event per chunk, then `data: [DONE]`), its body watched: when whoever reads
 * it cancels before the end (the connection under it broke) `onAbandoned` runs, and the stream is
 * still read to its end, so the answer so far is stored and the model's connection closes.
 * Runtimes that never abort a request's signal show a client that left only this way.
 *
 * Framing and encoding happen in the body's own pull, one stage for both: the SDK's
 * `JsonToSseTransformStream` and `TextEncoderStream` would be two more per chunk.
 */
export function answerResponse(
  stream: ReadableStream<UIMessageChunk>,
  options: { headers: Record<string, string>; onAbandoned: () => void },
): Response {
  const chunks = stream.getReader();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.read();
      if (done) {
        controller.enqueue(encoder.encode(SSE_DONE));
        controller.close();
      } else controller.enqueue(encoder.encode(sseEvent(JSON.stringify(value))));
    },
    cancel() {
      options.onAbandoned();
      void drain(chunks);
    },
  });
  return sseResponse(body, options.headers);
}

/** An SSE body as the AI SDK's UI message stream response: its headers, then `headers`. */
export function sseResponse(body: ReadableStream<Uint8Array>, extra: Record<string, string>): Response {
  const headers = new Headers(UI_MESSAGE_STREAM_HEADERS);
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return new Response(body, { headers });
}

async function drain(reader: ReadableStreamDefaultReader<unknown>): Promise<void> {
  try {
    while (!(await reader.read()).done) {
      // Nobody reads these any more; the answer's own stages store it as it ends.
    }
  } catch {
    // The answer's failure is reported where it happens (the handler's onError).
  }
}
