import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { createAnswerRuns, messageFromLog } from './answer-runs.js';
import { type AnswerSignal, createAnswerSignal } from './answer-signal.js';
import type { AnswerChunks, AnswerKey, AnswerStore } from './answer-store.js';
import { createMemoryAnswerStore } from './memory-answer-store.js';

/** A memory store that records every `append` call. */
function recordingStore(): AnswerStore & { appends: AnswerChunks[][] } {
  const store = createMemoryAnswerStore();
  const appends: AnswerChunks[][] = [];
  return Object.assign(Object.create(store) as AnswerStore, store, {
    appends,
    append: async (batches: readonly AnswerChunks[]) => {
      appends.push([...batches]);
      await store.append(batches);
    },
  });
}

/** A plain answer (not resumable) of `stream`, with a minute to run, as `start` takes it. */
function plainAnswer(answerId: string, key: AnswerKey, answer: AnswerSignal, stream: ReadableStream<UIMessageChunk>) {
  return { answerId, key, answer, resumable: false, graceMs: 0, deadlineAt: Date.now() + 60_000, stream };
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return text;
}

describe('createAnswerRuns', () => {
  it('writes the log in batches, never once per chunk, and keeps every chunk in order', async () => {
    const store = recordingStore();
    const runs = createAnswerRuns(store, { settleOrphan: async () => undefined });
    const key = { space: '', userId: 'u', chatId: 'c' };
    expect(await runs.acquire(key, { answerId: 'a1', userMessageId: 'm1' })).toEqual({ acquired: true });
    const chunks: UIMessageChunk[] = [
      { type: 'start', messageId: 'r1' },
      { type: 'text-start', id: 't' },
      ...Array.from(
        { length: 500 },
        (_, index): UIMessageChunk => ({ type: 'text-delta', id: 't', delta: `${index} ` }),
      ),
      { type: 'text-end', id: 't' },
      { type: 'finish' },
    ];
    const stream = new ReadableStream<UIMessageChunk>({
      async start(controller) {
        for (const [index, chunk] of chunks.entries()) {
          controller.enqueue(chunk);
          // About 300 ms in all: a few flush intervals.
          if (index % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 30));
        }
        controller.close();
      },
    });
    const answer = createAnswerSignal(new Request('http://host/'), 60_000);
    const body = runs.start(plainAnswer('a1', key, answer, stream));
    const sse = await readAll(body);
    expect(sse).toBe(`${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const logged = store.appends.flat().reduce((sum, batch) => sum + batch.chunks.length, 0);
    expect(logged).toBe(chunks.length);
    expect(store.appends.length).toBeGreaterThan(1);
    expect(store.appends.length).toBeLessThan(15);
    expect(await store.read('a1', 0)).toEqual(chunks.map((chunk) => JSON.stringify(chunk)));
    expect((await store.get('a1'))?.status).toBe('done');
    answer.dispose();
    runs.close();
  });

  it('stops an answer asked to stop while its turn was being set up, the moment it starts', async () => {
    const runs = createAnswerRuns(createMemoryAnswerStore(), { settleOrphan: async () => undefined });
    const key = { space: '', userId: 'u', chatId: 'setting-up' };
    expect(await runs.acquire(key, { answerId: 'a9', userMessageId: 'm9' })).toEqual({ acquired: true });
    await runs.stop({ space: '', userId: 'u', chatId: 'setting-up' });
    const answer = createAnswerSignal(new Request('http://host/'), 60_000);
    expect(answer.interruption).toBeUndefined();
    // A model stream that would run for a minute unless the answer is ended.
    const stream = new ReadableStream<UIMessageChunk>({
      start(controller) {
        controller.enqueue({ type: 'start', messageId: 'r9' });
        answer.signal.addEventListener('abort', () => controller.close());
      },
    });
    const body = runs.start(plainAnswer('a9', key, answer, stream));
    expect(answer.interruption).toBe('stop');
    await readAll(body);
    answer.dispose();
    runs.close();
  });

  it('polls once per process for all readers of answers running elsewhere, not once per reader', async () => {
    // A store whose events never reach other processes (a pooler that breaks LISTEN).
    const shared = createMemoryAnswerStore();
    const calls = { progress: 0, read: 0 };
    const store: AnswerStore = Object.assign(Object.create(shared) as AnswerStore, shared, {
      delivery: 'poll' as const,
      subscribe: () => () => undefined,
      read: (answerId: string, fromSeq: number) => {
        calls.read += 1;
        return shared.read(answerId, fromSeq);
      },
      progress: async (answerIds: readonly string[]) => {
        calls.progress += 1;
        const rows = await Promise.all(
          answerIds.map(async (answerId) => ({
            answerId,
            length: (await shared.read(answerId, 0)).length,
            done: (await shared.get(answerId))?.status === 'done',
          })),
        );
        return rows;
      },
    });
    const running = createAnswerRuns(store, { settleOrphan: async () => undefined });
    const elsewhere = createAnswerRuns(store, { settleOrphan: async () => undefined });
    const key = { space: '', userId: 'u', chatId: 'polled' };
    await running.acquire(key, { answerId: 'p1', userMessageId: 'm1' });
    let release!: () => void;
    const idle = new Promise<void>((resolve) => {
      release = resolve;
    });
    const stream = new ReadableStream<UIMessageChunk>({
      async start(controller) {
        controller.enqueue({ type: 'start', messageId: 'r1' });
        await idle; // a long sandbox command: nothing new for a while
        controller.enqueue({ type: 'finish' });
        controller.close();
      },
    });
    const answer = createAnswerSignal(new Request('http://host/'), 60_000);
    const first = readAll(running.start(plainAnswer('p1', key, answer, stream)));
    await new Promise((resolve) => setTimeout(resolve, 150));
    const record = await store.get('p1');
    if (!record) throw new Error('no record');
    const readers = Array.from({ length: 5 }, () => readAll(elsewhere.read(record, undefined)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = { ...calls };
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // One second of nothing new: about 5 polls in all, and each reader's 1 s safety read at most.
    expect(calls.progress - before.progress).toBeGreaterThanOrEqual(3);
    expect(calls.progress - before.progress).toBeLessThanOrEqual(7);
    expect(calls.read - before.read).toBeLessThanOrEqual(10);
    release();
    const texts = await Promise.all([first, ...readers]);
    for (const text of texts) expect(text).toContain('"type":"finish"');
    answer.dispose();
    running.close();
    elsewhere.close();
  });

  it('replays to a later reader from the first chunk and gives a new reader past the bound one error chunk', async () => {
    const store = createMemoryAnswerStore();
    const runs = createAnswerRuns(store, { settleOrphan: async () => undefined, maxLogBytes: 2_000 });
    const key = { space: '', userId: 'u', chatId: 'c2' };
    await runs.acquire(key, { answerId: 'a2', userMessageId: 'm2' });
    let push!: (chunk: UIMessageChunk) => void;
    let end!: () => void;
    const stream = new ReadableStream<UIMessageChunk>({
      start(controller) {
        push = (chunk) => controller.enqueue(chunk);
        end = () => controller.close();
      },
    });
    const answer = createAnswerSignal(new Request('http://host/'), 60_000);
    const first = readAll(runs.start(plainAnswer('a2', key, answer, stream)));
    push({ type: 'start', messageId: 'r2' });
    push({ type: 'text-start', id: 't' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const record = await store.get('a2');
    const early = readAll(runs.read(record as NonNullable<typeof record>));
    for (let index = 0; index < 40; index++) push({ type: 'text-delta', id: 't', delta: 'x'.repeat(100) });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const late = await readAll(runs.read((await store.get('a2')) as NonNullable<typeof record>));
    expect(late).toMatch(
      /^data: \{"type":"error","errorText":"This answer is too long to resume[^"]*"\}\n\ndata: \[DONE\]\n\n$/,
    );
    push({ type: 'text-end', id: 't' });
    push({ type: 'finish' });
    end();
    const [whole, replayed] = await Promise.all([first, early]);
    expect(replayed).toBe(whole);
    expect(whole.split('"text-delta"').length - 1).toBe(40);
    answer.dispose();
    runs.close();
  });

  it("ends its readers only once the answer's slot is given back, so what follows the end sees it ended", async () => {
    const store = createMemoryAnswerStore();
    // A slow database: the release lands 100 ms after it is asked for.
    const slow: AnswerStore = Object.assign(Object.create(store) as AnswerStore, store, {
      release: async (...args: Parameters<AnswerStore['release']>) => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        await store.release(...args);
      },
    });
    const runs = createAnswerRuns(slow, { settleOrphan: async () => undefined });
    const key = { space: '', userId: 'u', chatId: 'c' };
    await runs.acquire(key, { answerId: 'a1', userMessageId: 'm1' });
    const answer = createAnswerSignal(new Request('http://host/'), 60_000);
    const chunks: UIMessageChunk[] = [{ type: 'start', messageId: 'r1' }, { type: 'finish' }];
    const body = runs.start({
      answerId: 'a1',
      key,
      answer,
      resumable: false,
      graceMs: 0,
      deadlineAt: Date.now() + 60_000,
      stream: new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      }),
    });
    await readAll(body);
    expect((await store.get('a1'))?.status).toBe('done');
    // The next turn of the chat takes the slot at once.
    expect(await runs.acquire(key, { answerId: 'a2', userMessageId: 'm2' })).toEqual({ acquired: true });
    answer.dispose();
    runs.close();
  });

  it('gives back a slot whose release failed when its chat is asked again, and never resumes a refused turn', async () => {
    const store = createMemoryAnswerStore();
    let away = false;
    const flaky: AnswerStore = Object.assign(Object.create(store) as AnswerStore, store, {
      release: async (...args: Parameters<AnswerStore['release']>) => {
        if (away) throw new Error('the database is away');
        await store.release(...args);
      },
    });
    const runs = createAnswerRuns(flaky, { settleOrphan: async () => undefined });
    const key = { space: '', userId: 'u', chatId: 'c' };
    expect(await runs.acquire(key, { answerId: 'a1', userMessageId: 'm1' })).toEqual({ acquired: true });
    // While its turn is being set up the slot is held: a second turn of the chat is refused.
    expect(await runs.acquire(key, { answerId: 'a2', userMessageId: 'm2' })).toMatchObject({
      acquired: false,
      running: { answerId: 'a1' },
    });
    away = true;
    await expect(runs.abandon('a1')).rejects.toThrow('away');
    away = false;
    // The slot still says running, but nothing runs it here: the next turn takes it at once.
    expect((await store.get('a1'))?.status).toBe('running');
    expect(await runs.acquire(key, { answerId: 'a3', userMessageId: 'm1' })).toEqual({ acquired: true });
    expect(await store.get('a1')).toBeUndefined();
    // A refused turn leaves nothing a resume could find.
    await runs.abandon('a3');
    expect(await store.find(key, 0)).toBeUndefined();
    runs.close();
  });
});

describe('messageFromLog', () => {
  it("rebuilds the message a dead process's log describes, up to where it stops", async () => {
    const log = [
      { type: 'start', messageId: 'r3' },
      { type: 'start-step' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Half an ' },
      { type: 'text-delta', id: 't', delta: 'answer' },
      { type: 'tool-input-available', toolCallId: 'call-1', toolName: 'lookup', input: { q: 'x' }, dynamic: true },
    ].map((chunk) => JSON.stringify(chunk));
    const message = await messageFromLog(log);
    expect(message?.id).toBe('r3');
    expect(message?.parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Half an answer', state: 'streaming' },
      expect.objectContaining({ type: 'dynamic-tool', toolCallId: 'call-1', state: 'input-available' }),
    ]);
    expect(await messageFromLog(['not json', '{"type":"text-delta","id":"t","delta":"x"}'])).toBeUndefined();
  });
});
