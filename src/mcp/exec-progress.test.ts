import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutputStreamName } from '../sandbox/backend.js';
import { createToolOutputFilter } from '../sandbox/output-filter.js';
import {
  ExecProgress,
  LIVE_OUTPUT_STOPPED,
  type ProgressNotification,
  progressBudget,
  progressFrameBytes,
  progressTokenOf,
} from './exec-progress.js';

const AGENT_KEY = `mordn_${'K'.repeat(20)}-${'q'.repeat(22)}`;
const filter = createToolOutputFilter(AGENT_KEY, [], { redactPatterns: [/internal-token-[0-9]+/g] });

interface Sent {
  at: number;
  notification: ProgressNotification;
}

function start(options: { maxBytes?: number; progressToken?: string | number; signal?: AbortSignal } = {}) {
  const sent: Sent[] = [];
  const progress = new ExecProgress({
    progressToken: options.progressToken ?? 'token-1',
    maxBytes: options.maxBytes ?? 64 * 1024,
    filter,
    send: async (notification) => {
      sent.push({ at: performance.now(), notification });
    },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const write = (text: string | Buffer, stream: OutputStreamName = 'stdout') =>
    progress.onOutput(stream, Buffer.from(text));
  const messages = () => sent.map((entry) => entry.notification.params.message);
  /** Lets the pacing run until it has nothing more to do. */
  const settle = () => vi.advanceTimersByTimeAsync(5_000);
  return { progress, sent, write, messages, settle };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('ExecProgress', () => {
  it('sends new output at once, then at most one notification per 250 ms, none while nothing is new', async () => {
    const { write, sent, messages } = start();
    write('a\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(messages()).toEqual(['a\n']);
    write('b\n');
    await vi.advanceTimersByTimeAsync(249);
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(messages()).toEqual(['a\n', 'b\n']);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent).toHaveLength(2);
    write('c\n');
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((entry) => entry.at)).toEqual([0, 250, 10_250]);
  });

  it('carries the token, the bytes so far and the stream, and nothing else', async () => {
    const { write, sent } = start({ progressToken: 7 });
    write('out\n');
    write('err!\n', 'stderr');
    await vi.advanceTimersByTimeAsync(250);
    expect(sent.map((entry) => entry.notification)).toEqual([
      {
        method: 'notifications/progress',
        params: { progressToken: 7, progress: 4, message: 'out\n', _meta: { 'mordn/stream': 'stdout' } },
      },
      {
        method: 'notifications/progress',
        params: { progressToken: 7, progress: 9, message: 'err!\n', _meta: { 'mordn/stream': 'stderr' } },
      },
    ]);
  });

  it('holds an unfinished line back until it ends or the command does', async () => {
    const { write, progress, messages, settle } = start();
    write('line-');
    await settle();
    expect(messages()).toEqual([]);
    write('1\nline-2');
    await settle();
    expect(messages()).toEqual(['line-1\n']);
    const finished = progress.finish();
    await settle();
    await finished;
    expect(messages()).toEqual(['line-1\n', 'line-2']);
  });

  it('cuts a flood without line ends into pieces of at most 4 KiB, so it still progresses', async () => {
    const { write, progress, messages, settle } = start();
    write('x'.repeat(10_000));
    await vi.advanceTimersByTimeAsync(0);
    expect(messages().map((message) => message.length)).toEqual([3840]);
    await settle();
    expect(messages().map((message) => message.length)).toEqual([3840, 3840, 2064]);
    const finished = progress.finish();
    await settle();
    await finished;
    expect(messages().join('')).toBe('x'.repeat(10_000));
  });

  it('decodes each stream on its own, a character split across reads whole, invalid bytes as U+FFFD', async () => {
    const { progress, sent, messages, settle } = start();
    progress.onOutput('stdout', Buffer.from([0xe2, 0x82]));
    progress.onOutput('stderr', Buffer.from([0xc3]));
    progress.onOutput('stdout', Buffer.from([0xac, 0x0a, 0xff, 0x0a]));
    progress.onOutput('stderr', Buffer.from([0xa9, 0x0a]));
    await settle();
    expect(messages()).toEqual(['€\n\uFFFD\n', 'é\n']);
    expect(sent.map((entry) => entry.notification.params.progress)).toEqual([6, 9]);
  });

  it('redacts a secret written in two parts, across the point a piece stops', async () => {
    const { write, progress, messages, settle } = start();
    write(`${'x'.repeat(300)}token internal-tok`);
    await settle();
    expect(messages()).toEqual(['x'.repeat(62)]);
    write('en-12345 and the key ');
    await settle();
    write(`${AGENT_KEY.slice(0, 20)}`);
    await settle();
    write(`${AGENT_KEY.slice(20)}.\n`);
    const finished = progress.finish();
    await settle();
    await finished;
    const all = messages().join('');
    expect(all).toBe(`${'x'.repeat(300)}token [redacted] and the key [redacted].\n`);
    for (const message of messages()) {
      expect(message).not.toMatch(/internal-tok|en-12345/);
      expect(message).not.toContain(AGENT_KEY.slice(0, 12));
      expect(message).not.toContain(AGENT_KEY.slice(-12));
    }
  });

  it('never cuts a piece inside a secret that crosses the cut', async () => {
    const { write, messages, settle } = start();
    // The 4 KiB piece would stop (256 bytes back) at 3840, inside the key.
    write(`${'a'.repeat(3820)}${AGENT_KEY}${'b'.repeat(300)}\n`);
    await settle();
    expect(messages()).toEqual(['a'.repeat(3820), `[redacted]${'b'.repeat(300)}\n`]);
  });

  it('stays within its budget, counting escapes, and ends with one notification saying output continues', async () => {
    const maxBytes = 2048;
    const { write, sent, progress, messages, settle } = start({ maxBytes });
    const lines = Array.from({ length: 200 }, (_, line) => `"quoted"\u0001 line ${line}\n`);
    for (const line of lines) write(line);
    await settle();
    write('more\n');
    await settle();
    await progress.finish();
    const frames = sent.map((entry) => progressFrameBytes(entry.notification));
    expect(frames.reduce((sum, bytes) => sum + bytes, 0)).toBe(progress.usedBytes);
    expect(progress.usedBytes).toBeLessThanOrEqual(maxBytes);
    expect(progress.usedBytes).toBeGreaterThan(maxBytes - 100);
    expect(messages().at(-1)).toBe(LIVE_OUTPUT_STOPPED);
    expect(messages().filter((message) => message === LIVE_OUTPUT_STOPPED)).toHaveLength(1);
    const carried = messages().slice(0, -1).join('');
    expect(carried.length).toBeGreaterThan(500);
    expect(lines.join('').startsWith(carried)).toBe(true);
    // The closing notification is paced like the others.
    expect((sent.at(-1)?.at as number) - (sent.at(-2)?.at as number)).toBeGreaterThanOrEqual(250);
    const progresses = sent.map((entry) => entry.notification.params.progress);
    for (let index = 1; index < progresses.length; index += 1) {
      expect(progresses[index]).toBeGreaterThan(progresses[index - 1] as number);
    }
  });

  it('keeps at most its budget of a flood and drops the rest as it arrives', async () => {
    const { progress, sent, messages, settle } = start({ maxBytes: 8192 });
    const chunk = Buffer.alloc(64 * 1024, 'z');
    for (let index = 0; index < 100; index += 1) progress.onOutput('stdout', chunk);
    await settle();
    await progress.finish();
    expect(progress.usedBytes).toBeLessThanOrEqual(8192);
    expect(messages().at(-1)).toBe(LIVE_OUTPUT_STOPPED);
    // The closing notification counts every byte the command wrote.
    expect(sent.at(-1)?.notification.params.progress).toBe(100 * 64 * 1024);
  });

  it('sends nothing when not even the closing notification fits', async () => {
    const { write, sent, progress, settle } = start({ maxBytes: 100 });
    write('hello\n');
    await settle();
    await progress.finish();
    expect(sent).toEqual([]);
    expect(progress.usedBytes).toBe(0);
  });

  it('refuses a budget that is not a byte count', () => {
    expect(() => start({ maxBytes: -1 })).toThrow(new TypeError('maxBytes must be a non-negative integer.'));
    expect(() => start({ maxBytes: 1.5 })).toThrow(TypeError);
  });

  it('sends what is left at the end, still paced', async () => {
    const { write, progress, sent, settle } = start();
    write('one\n');
    await vi.advanceTimersByTimeAsync(100);
    write('two\n');
    write('three', 'stderr');
    const finished = progress.finish();
    await settle();
    await finished;
    expect(sent.map((entry) => [entry.at, entry.notification.params.message])).toEqual([
      [0, 'one\n'],
      [250, 'three'],
      [500, 'two\n'],
    ]);
  });

  it('stops at once when the call is aborted', async () => {
    const controller = new AbortController();
    const { write, sent, progress, settle } = start({ signal: controller.signal });
    write('a\n');
    await vi.advanceTimersByTimeAsync(0);
    write('b\n');
    controller.abort();
    await settle();
    await progress.finish();
    expect(sent).toHaveLength(1);
  });
});

describe('progressTokenOf and progressBudget', () => {
  it('reads a string or number token and nothing else', () => {
    expect(progressTokenOf({ _meta: { progressToken: 'abc' } })).toBe('abc');
    expect(progressTokenOf({ _meta: { progressToken: 3 } })).toBe(3);
    expect(progressTokenOf({ _meta: { progressToken: { nested: 1 } } })).toBeUndefined();
    expect(progressTokenOf({ _meta: null })).toBeUndefined();
    expect(progressTokenOf(undefined)).toBeUndefined();
  });

  it('gives progress an eighth of the result budget, at most 64 KiB', () => {
    expect(progressBudget(1_044_480)).toBe(65_536);
    expect(progressBudget(16_384)).toBe(2048);
  });
});
