import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesceDeltas, withCoalescedDeltas } from './coalesce-deltas.js';

type Part = { type: string; id?: string; delta?: string; providerMetadata?: unknown };

const WINDOW_MS = 10;
const start = (id: string) => ({ type: 'text-start', id });
const delta = (id: string, text: string, extra: object = {}) => ({ type: 'text-delta', id, delta: text, ...extra });
const end = (id: string) => ({ type: 'text-end', id });

/** A source of parts, and the controller that sends them. */
function source() {
  let controller!: ReadableStreamDefaultController<never>;
  const stream = new ReadableStream<never>({
    start(started) {
      controller = started;
    },
  });
  return { stream, controller };
}

/** A coalescing stage on a fake clock: write parts at chosen times, read what came out so far. */
function stage() {
  let clock = 0;
  const input = source();
  const coalesced = coalesceDeltas(input.stream, WINDOW_MS, () => clock);
  const out: Part[] = [];
  const reading = (async () => {
    for await (const part of coalesced as unknown as AsyncIterable<Part>) out.push(part);
  })();
  const settle = () => vi.advanceTimersByTimeAsync(0);
  return {
    out,
    async write(part: object) {
      input.controller.enqueue(part as never);
      await settle();
    },
    async advance(ms: number) {
      clock += ms;
      await vi.advanceTimersByTimeAsync(ms);
    },
    async close() {
      input.controller.close();
      await reading;
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('coalesceDeltas', () => {
  it('sends the first delta at once and joins those that follow within the window', async () => {
    const s = stage();
    await s.write(start('t'));
    await s.write(delta('t', 'a'));
    expect(s.out).toEqual([start('t'), delta('t', 'a')]);
    await s.advance(2);
    await s.write(delta('t', 'b'));
    await s.advance(2);
    await s.write(delta('t', 'c'));
    expect(s.out).toHaveLength(2);
    // The window opened by the first delta closes 10 ms after it: 'b' and 'c' go on as one.
    await s.advance(6);
    expect(s.out).toEqual([start('t'), delta('t', 'a'), delta('t', 'bc')]);
    // A delta after a quiet window goes on at once again.
    await s.advance(WINDOW_MS);
    await s.write(delta('t', 'd'));
    expect(s.out.at(-1)).toEqual(delta('t', 'd'));
    await s.close();
  });

  it('lets every other part through in order, after the deltas held before it', async () => {
    const s = stage();
    await s.write(start('t'));
    await s.write(delta('t', 'a'));
    await s.write(delta('t', 'b'));
    await s.write(delta('t', 'c'));
    await s.write(end('t'));
    await s.write(start('u'));
    await s.write(delta('u', 'x'));
    await s.close();
    // The next part's first delta is not held behind the previous part's window.
    expect(s.out).toEqual([start('t'), delta('t', 'a'), delta('t', 'bc'), end('t'), start('u'), delta('u', 'x')]);
  });

  it('never joins deltas of different parts or kinds, or deltas that carry provider metadata', async () => {
    const s = stage();
    const reasoning = { type: 'reasoning-delta', id: 'r', delta: 'think' };
    const tagged = delta('t', 'm', { providerMetadata: { p: { k: 1 } } });
    await s.write(delta('t', 'a'));
    await s.write(delta('t', 'b'));
    await s.write(reasoning);
    await s.write({ ...reasoning, delta: 'ing' });
    await s.write(delta('t', 'c'));
    await s.write(tagged);
    await s.write(delta('t', 'd'));
    await s.close();
    expect(s.out).toEqual([
      delta('t', 'a'),
      delta('t', 'b'),
      { ...reasoning, delta: 'thinking' },
      delta('t', 'c'),
      tagged,
      delta('t', 'd'),
    ]);
  });

  it('sends what it holds when the stream ends, and nothing after a cancel', async () => {
    const s = stage();
    await s.write(delta('t', 'a'));
    await s.write(delta('t', 'b'));
    await s.close();
    expect(s.out).toEqual([delta('t', 'a'), delta('t', 'b')]);

    const input = source();
    const reader = coalesceDeltas(input.stream, WINDOW_MS, () => 0).getReader();
    input.controller.enqueue(delta('t', 'a') as never);
    expect((await reader.read()).value).toEqual(delta('t', 'a'));
    input.controller.enqueue(delta('t', 'b') as never);
    const pending = reader.read();
    await vi.advanceTimersByTimeAsync(0);
    await reader.cancel();
    await pending;
    // The held delta's timer fires into a cancelled stream without throwing.
    await vi.advanceTimersByTimeAsync(WINDOW_MS);
  });
});

describe('withCoalescedDeltas', () => {
  it('wraps a model object, and leaves an id string or a zero window alone', async () => {
    vi.useRealTimers();
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'text-start', id: 't' });
            for (const piece of ['one', ' two', ' three'])
              controller.enqueue({ type: 'text-delta', id: 't', delta: piece });
            controller.enqueue({ type: 'text-end', id: 't' });
            controller.close();
          },
        }),
      }),
    });
    expect(withCoalescedDeltas('openai/gpt-5', 10)).toBe('openai/gpt-5');
    expect(withCoalescedDeltas(model, 0)).toBe(model);
    const wrapped = withCoalescedDeltas(model, 1000);
    if (typeof wrapped === 'string' || wrapped.specificationVersion !== 'v3') throw new Error('not a v3 model');
    const { stream } = await wrapped.doStream({ prompt: [] });
    const parts: Array<{ type: string; delta?: string }> = [];
    for await (const part of stream as unknown as AsyncIterable<{ type: string; delta?: string }>) parts.push(part);
    expect(parts.map((part) => part.delta ?? part.type)).toEqual(['text-start', 'one', ' two three', 'text-end']);
  });
});
