import type { UIMessageChunk } from 'ai';
import { failureText } from './answer-failures.js';
import type { AnswerSignal } from './answer-signal.js';

/** What goes on in place of one chunk: none, itself, or more; at once, or when its promise settles. */
export type ChunkPass = (chunk: UIMessageChunk) => readonly UIMessageChunk[] | Promise<readonly UIMessageChunk[]>;

/**
 * `first`, then `second` on each chunk it yields, in order: synchronous while both are (the
 * common case, one chunk in, the same chunk out), a promise only when a step has to wait.
 */
export function chainPasses(first: (chunk: UIMessageChunk) => readonly UIMessageChunk[], second: ChunkPass): ChunkPass {
  return (chunk) => {
    const between = first(chunk);
    if (between.length === 0) return between;
    if (between.length === 1) return second(between[0] as UIMessageChunk);
    return (async () => {
      const out: UIMessageChunk[] = [];
      for (const each of between) out.push(...(await second(each)));
      return out;
    })();
  };
}

/**
 * Writes `stream` to `write`, each chunk mapped by `pass` (in order), until the answer is
 * interrupted, then one closing chunk and the end: an `error` chunk saying the answer took too
 * long for a timeout (its client is still reading), an `abort` chunk otherwise. The answer ends at
 * once even when something upstream ignores the abort — a tool that never settles would otherwise
 * hold the stream, and the stored answer, open for good. Resolves when nothing more will be
 * written; rejects with the stream's own failure, for the UI stream's `onError` to mask.
 *
 * It runs as the UI message stream's `execute` rather than as a stream stage of its own: one read
 * and one write per chunk, and a chunk `pass` maps synchronously costs no promise.
 *
 * @example
 * execute: ({ writer }) => endOnInterruption(result.toUIMessageStream(), answer, (chunk) => writer.write(chunk), relay.pass),
 */
export function endOnInterruption(
  stream: ReadableStream<UIMessageChunk>,
  answer: AnswerSignal,
  write: (chunk: UIMessageChunk) => void,
  pass: ChunkPass = (chunk) => [chunk],
): Promise<void> {
  const reader = stream.getReader();
  let ended = false;
  return new Promise<void>((resolve, reject) => {
    const end = () => {
      if (ended) return;
      ended = true;
      const reason = answer.interruption;
      write(reason === 'timeout' ? { type: 'error', errorText: failureText(reason) } : { type: 'abort' });
      resolve();
      reader.cancel(answer.signal.reason).catch(() => undefined);
    };
    if (answer.signal.aborted) return end();
    answer.signal.addEventListener('abort', end, { once: true });
    const settle = (then: () => void) => {
      answer.signal.removeEventListener('abort', end);
      if (ended) return;
      ended = true;
      then();
    };
    const fail = (error: unknown) => settle(() => reject(error));
    const forward = (out: readonly UIMessageChunk[]) => {
      // The answer may have ended while a step of `pass` was still working.
      if (ended) return;
      for (const chunk of out) write(chunk);
    };
    const next = (): void => {
      reader.read().then(({ done, value }) => {
        if (ended) return;
        if (done) return settle(resolve);
        try {
          const out = pass(value);
          if (!Array.isArray(out)) {
            (out as Promise<readonly UIMessageChunk[]>).then((settled) => {
              forward(settled);
              next();
            }, fail);
            return;
          }
          forward(out);
        } catch (error) {
          return fail(error);
        }
        next();
      }, fail);
    };
    next();
  });
}
