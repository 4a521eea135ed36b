import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { createAnswerSignal } from './answer-signal.js';
import { chainPasses, endOnInterruption } from './end-on-interruption.js';

const delta = (text: string): UIMessageChunk => ({ type: 'text-delta', id: 't', delta: text });

/** A stream that sends what it is given, and ends or fails when told. */
function source() {
  let controller!: ReadableStreamDefaultController<UIMessageChunk>;
  const stream = new ReadableStream<UIMessageChunk>({
    start(started) {
      controller = started;
    },
  });
  return { stream, controller };
}

function answerOf() {
  const client = new AbortController();
  const answer = createAnswerSignal(new Request('http://localhost/', { signal: client.signal }), 60_000);
  return { answer, client };
}

describe('endOnInterruption', () => {
  it('writes every chunk in order, mapped at once or after its promise, and resolves at the end', async () => {
    const { answer } = answerOf();
    const input = source();
    const written: UIMessageChunk[] = [];
    const pass = (chunk: UIMessageChunk) => {
      if (chunk.type !== 'text-delta') return [chunk];
      if (chunk.delta === 'drop') return [];
      // A slow step: what follows waits for it.
      if (chunk.delta === 'slow')
        return new Promise<UIMessageChunk[]>((resolve) => setTimeout(() => resolve([delta('SLOW'), delta('+')]), 20));
      return [chunk];
    };
    const done = endOnInterruption(input.stream, answer, (chunk) => written.push(chunk), pass);
    for (const text of ['a', 'slow', 'drop', 'b']) input.controller.enqueue(delta(text));
    input.controller.close();
    await done;
    expect(written).toEqual([delta('a'), delta('SLOW'), delta('+'), delta('b')]);
    answer.dispose();
  });

  it('ends at once with an abort chunk when the client stops, even if the stream never ends', async () => {
    const { answer, client } = answerOf();
    const input = source();
    const written: UIMessageChunk[] = [];
    const done = endOnInterruption(input.stream, answer, (chunk) => written.push(chunk));
    input.controller.enqueue(delta('a'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    client.abort();
    await done;
    // Nothing after the end: the stream was cancelled.
    expect(() => input.controller.enqueue(delta('late'))).toThrow();
    expect(written).toEqual([delta('a'), { type: 'abort' }]);
    expect(answer.interruption).toBe('stop');
    answer.dispose();
  });

  it('drops what a pending step yields once the answer ended', async () => {
    const { answer } = answerOf();
    const input = source();
    const written: UIMessageChunk[] = [];
    let release: (chunks: UIMessageChunk[]) => void = () => undefined;
    const done = endOnInterruption(
      input.stream,
      answer,
      (chunk) => written.push(chunk),
      () =>
        new Promise<UIMessageChunk[]>((resolve) => {
          release = resolve;
        }),
    );
    input.controller.enqueue(delta('a'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    answer.disconnect();
    await done;
    release([delta('a')]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(written).toEqual([{ type: 'abort' }]);
    answer.dispose();
  });

  it("rejects with the stream's own failure", async () => {
    const { answer } = answerOf();
    const input = source();
    const done = endOnInterruption(input.stream, answer, () => undefined);
    input.controller.error(new Error('model failed'));
    await expect(done).rejects.toThrow('model failed');
    answer.dispose();
  });
});

describe('chainPasses', () => {
  it('is synchronous while both steps are, and keeps the order when one waits', async () => {
    const split = (chunk: UIMessageChunk) =>
      chunk.type === 'text-delta' && chunk.delta === 'ab' ? [delta('a'), delta('b')] : [chunk];
    const sync = chainPasses(split, (chunk) => [chunk]);
    expect(sync(delta('x'))).toEqual([delta('x')]);
    const waiting = chainPasses(split, async (chunk) => [chunk, chunk]);
    expect(await waiting(delta('ab'))).toEqual([delta('a'), delta('a'), delta('b'), delta('b')]);
    expect(
      chainPasses(
        () => [],
        () => [delta('never')],
      )(delta('x')),
    ).toEqual([]);
  });
});
