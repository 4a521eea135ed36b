import { ServiceError } from '../errors.js';
import type { InterruptionReason } from './interrupted-message.js';

/** The one abort signal of an answer, and why it fired. */
export interface AnswerSignal {
  readonly signal: AbortSignal;
  /** Why the answer was cut short, once it was (the first cause wins). */
  readonly interruption: InterruptionReason | undefined;
  /** Ends the answer because its response lost its reader. */
  disconnect(): void;
  /** Stops the deadline and lets go of the request's signal. Safe to call more than once. */
  dispose(): void;
}

/**
 * One signal for setup, discovery and the whole answer, fired by the first of: the request's own
 * signal (`stop`), a response nobody reads any more (`disconnect`, see `watchResponseReader`) and
 * the deadline (`timeout`, aborting with a 502 `UPSTREAM_UNAVAILABLE` so setup can answer it).
 *
 * @example
 * const answer = createAnswerSignal(request, 120_000);
 * streamText({ model, messages, abortSignal: answer.signal });
 * // later: answer.interruption === 'stop' when the client aborted its fetch
 */
export function createAnswerSignal(request: Request, timeoutMs: number): AnswerSignal {
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
  const onStop = () => interrupt('stop', request.signal.reason);
  if (request.signal.aborted) onStop();
  else request.signal.addEventListener('abort', onStop, { once: true });
  return {
    signal: controller.signal,
    get interruption() {
      return interruption;
    },
    disconnect: () =>
      interrupt('disconnect', new DOMException('The response lost its reader before the answer ended.', 'AbortError')),
    dispose: () => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onStop);
    },
  };
}

/**
 * The same response with its body watched: when whoever reads it cancels the body before the end
 * (the connection under it broke), `onAbandoned` runs. Runtimes that never abort a request's
 * signal show a client that left only this way.
 */
export function watchResponseReader(response: Response, onAbandoned: () => void): Response {
  const body = response.body;
  if (!body) return response;
  const reader = body.getReader();
  const watched = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      onAbandoned();
      return reader.cancel(reason);
    },
  });
  return new Response(watched, { status: response.status, statusText: response.statusText, headers: response.headers });
}
