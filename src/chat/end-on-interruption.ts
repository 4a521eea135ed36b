import type { UIMessageChunk } from 'ai';
import { failureText } from './answer-failures.js';
import type { AnswerSignal } from './answer-signal.js';

/**
 * `stream`, each chunk mapped by `pass` (what goes on in its place: none, itself, or more; at
 * once or when its promise settles, in order), until
 * the answer is interrupted, then one closing chunk and the end: an `error` chunk
 * saying the answer took too long for a timeout (its client is still reading), an `abort` chunk
 * otherwise. The answer ends at once even when something upstream ignores the abort — a tool that
 * never settles would otherwise hold the stream, and the stored answer, open for good.
 *
 * @example
 * writer.merge(endOnInterruption(result.toUIMessageStream(), answer, relay.pass));
 */
export function endOnInterruption(
  stream: ReadableStream<UIMessageChunk>,
  answer: AnswerSignal,
  pass: (chunk: UIMessageChunk) => readonly UIMessageChunk[] | Promise<readonly UIMessageChunk[]> = (chunk) => [chunk],
): ReadableStream<UIMessageChunk> {
  const reader = stream.getReader();
  let ended = false;
  let stopWatching = () => {};
  return new ReadableStream<UIMessageChunk>({
    start(controller) {
      const end = () => {
        if (ended) return;
        ended = true;
        const reason = answer.interruption;
        controller.enqueue(
          reason === 'timeout' ? { type: 'error', errorText: failureText(reason) } : { type: 'abort' },
        );
        controller.close();
        reader.cancel(answer.signal.reason).catch(() => undefined);
      };
      if (answer.signal.aborted) return end();
      answer.signal.addEventListener('abort', end, { once: true });
      stopWatching = () => answer.signal.removeEventListener('abort', end);
    },
    async pull(controller) {
      // One read may map to nothing (a dropped chunk): read on until something goes out.
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (error) {
          if (ended) return;
          throw error;
        }
        if (ended) return;
        if (next.done) {
          ended = true;
          stopWatching();
          controller.close();
          return;
        }
        const out = await pass(next.value);
        // The answer may have ended while a step of `pass` was still working.
        if (ended) return;
        for (const chunk of out) controller.enqueue(chunk);
        if (out.length > 0) return;
      }
    },
    cancel(reason) {
      ended = true;
      stopWatching();
      return reader.cancel(reason);
    },
  });
}
