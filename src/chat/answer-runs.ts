import { randomUUID } from 'node:crypto';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import type { AnswerSignal } from './answer-signal.js';
import { SSE_DONE, sseEvent } from './answer-signal.js';
import type { AnswerChunks, AnswerEvent, AnswerKey, AnswerRecord, AnswerScope, AnswerStore } from './answer-store.js';

/** A lease runs this long unless renewed; a dead process's answers are settled within about twice it. */
const LEASE_MS = 10_000;
const RENEW_MS = 3_000;
/** Without pushed events, a stop request is looked for this often. */
const POLL_RENEW_MS = 500;
const SWEEP_MS = 5_000;
/** New chunks go to the log in one write per this interval, for every answer of the process. */
const FLUSH_MS = 100;
/** Without pushed events the answers followed here are polled this often (with them, a reader reads at least every SAFETY_POLL_MS). */
const POLL_MS = 200;
const SAFETY_POLL_MS = 1_000;
/** A reader in another process says it is attached this often; an answer counts it for twice that. */
const PRESENCE_MS = 2_000;
/** How long a stored answer can still be resumed (replayed) before its log is deleted. */
export const RESUME_WINDOW_MS = 60_000;
/** The default bound of one answer's log (its chunks' JSON). */
export const DEFAULT_MAX_LOG_BYTES = 16 * 1024 * 1024;

export const TOO_LONG_TO_RESUME = 'This answer is too long to resume; it goes on, and will be in the chat once stored.';

/** Turns one chunk's JSON into what a replaying reader gets (re-signed file links). */
export type ChunkRewrite = (json: string) => string | Promise<string>;

interface Reader {
  cursor: number;
}

/** An answer this process runs. */
interface LocalRun {
  readonly answerId: string;
  readonly key: AnswerKey;
  readonly answer: AnswerSignal;
  readonly resumable: boolean;
  readonly detachedUntil: number;
  readonly graceMs: number;
  /** Chunk JSON from sequence number `base` on (older ones let go once past the log's bound). */
  chunks: string[];
  base: number;
  total: number;
  logBytes: number;
  /** Set once the log passed its bound: chunks from here on are not kept for new readers. */
  overflowAt: number | undefined;
  overflowLogged: boolean;
  /** Chunks handed to the store's log. */
  logged: number;
  ended: boolean;
  readers: Set<Reader>;
  waiters: Array<() => void>;
  graceTimer: NodeJS.Timeout | undefined;
  remoteSeenAt: number;
  settled: Promise<void>;
}

export interface StartAnswer {
  answerId: string;
  key: AnswerKey;
  answer: AnswerSignal;
  /** The client asked for it: it outlives its reader for `graceMs` (at most until `deadlineAt`). */
  resumable: boolean;
  graceMs: number;
  deadlineAt: number;
  stream: ReadableStream<UIMessageChunk>;
}

export interface AnswerRunsOptions {
  /** Stores what the log of an answer whose process died holds, closed and marked `failed`. */
  settleOrphan(record: AnswerRecord, message: UIMessage | undefined): Promise<void>;
  maxLogBytes?: number;
  onError?(error: unknown): void;
}

/**
 * The answers of one process over an `AnswerStore`: it runs each answer independently of any one
 * response (its chunks fan out to every reader, here or in another process through the store's
 * log), holds and renews its lease, honours stop requests from anywhere, keeps a detached
 * resumable answer alive for its grace, and settles the answers of processes that died.
 */
export interface AnswerRuns {
  readonly owner: string;
  readonly store: AnswerStore;
  acquire(
    key: AnswerKey,
    answer: { answerId: string; userMessageId: string },
  ): Promise<{ acquired: true } | { acquired: false; running: AnswerRecord }>;
  /** Gives the slot back when an acquired answer never started. */
  abandon(answerId: string): Promise<void>;
  /** Runs the answer; returns the first reader's SSE body (the request that started it). */
  start(answer: StartAnswer): ReadableStream<Uint8Array>;
  /** A reader of an answer from its first chunk (replayed) to its end, wherever it runs. */
  read(record: AnswerRecord, rewrite?: ChunkRewrite): ReadableStream<Uint8Array>;
  /** Asks the running answers of `scope` to stop, wherever they run; with `wait`, until they are stored. */
  stop(scope: AnswerScope, options?: { wait?: boolean }): Promise<void>;
  /** Waits up to `timeoutMs` for this process's answers; then ends them `failed`. */
  drain(timeoutMs: number): Promise<void>;
  close(): void;
}

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());

function wake(run: LocalRun): void {
  const waiters = run.waiters;
  run.waiters = [];
  for (const waiter of waiters) waiter();
}

function errorEvent(text: string): string {
  return sseEvent(JSON.stringify({ type: 'error', errorText: text }));
}

/** The message an answer's log describes (the chunks as `useChat` would have assembled them). */
export async function messageFromLog(chunks: readonly string[]): Promise<UIMessage | undefined> {
  const parsed: UIMessageChunk[] = [];
  for (const json of chunks) {
    try {
      const chunk = JSON.parse(json) as UIMessageChunk;
      // An error or abort ends the log; what came before is the message.
      if (chunk.type === 'error' || chunk.type === 'abort') break;
      parsed.push(chunk);
    } catch {
      // A chunk that does not parse was never written by us; skip it.
    }
  }
  if (!parsed.some((chunk) => chunk.type === 'start')) return undefined;
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of parsed) controller.enqueue(chunk);
      controller.close();
    },
  });
  let message: UIMessage | undefined;
  try {
    for await (const state of readUIMessageStream({ stream, terminateOnError: false })) message = state;
  } catch {
    // A log cut mid-part still yields the message up to there.
  }
  return message;
}

export function createAnswerRuns(store: AnswerStore, options: AnswerRunsOptions): AnswerRuns {
  const owner = randomUUID();
  const maxLogBytes = options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES;
  const runs = new Map<string, LocalRun>();
  /** Answers this process acquired that have not started yet (their turns are being set up). */
  const starting = new Set<string>();
  /** Answers asked to stop while they were being set up: stopped the moment they start. */
  const stoppedWhileStarting = new Set<string>();
  /** Stops the answer if it runs here, or as soon as it starts if it is being set up here. */
  const stopHere = (answerId: string) => {
    const run = runs.get(answerId);
    if (run) run.answer.interrupt('stop');
    else if (starting.has(answerId)) stoppedWhileStarting.add(answerId);
  };
  /** Readers here of answers that run elsewhere: each answer id's wake-ups. */
  const followers = new Map<string, Set<() => void>>();
  const reportError = (error: unknown) => options.onError?.(error);
  const polling = () => store.delivery === 'poll';

  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    flushTimer = undefined;
    const batches: AnswerChunks[] = [];
    for (const run of runs.values()) {
      const end = run.overflowAt ?? run.total;
      const overflowNow = run.overflowAt !== undefined && !run.overflowLogged;
      if (run.logged >= end && !overflowNow) continue;
      const chunks = run.chunks.slice(run.logged - run.base, end - run.base);
      batches.push({
        answerId: run.answerId,
        firstSeq: run.logged,
        chunks,
        ...(overflowNow ? { overflow: true } : {}),
      });
      run.logged = end;
      if (overflowNow) {
        run.overflowLogged = true;
        trim(run);
      }
    }
    if (batches.length === 0) return flushing;
    flushing = flushing.then(() => store.append(batches)).catch(reportError);
    return flushing;
  };
  const scheduleFlush = () => {
    flushTimer ??= setTimeout(() => void flush(), FLUSH_MS);
  };

  /** Past the bound, lets go of chunks every reader has passed. */
  const trim = (run: LocalRun) => {
    if (run.overflowAt === undefined) return;
    // What the log still needs, then what every reader here still needs.
    let keepFrom = run.overflowLogged ? run.total : run.logged;
    for (const reader of run.readers) keepFrom = Math.min(keepFrom, reader.cursor);
    if (keepFrom > run.base) {
      run.chunks = run.chunks.slice(keepFrom - run.base);
      run.base = keepFrom;
    }
  };

  const push = (run: LocalRun, chunk: UIMessageChunk) => {
    const json = JSON.stringify(chunk);
    run.chunks.push(json);
    run.total++;
    if (run.overflowAt === undefined) {
      run.logBytes += json.length + 1;
      if (run.logBytes > maxLogBytes) run.overflowAt = run.total - 1;
    } else trim(run);
    scheduleFlush();
    wake(run);
  };

  /** A detached resumable answer nobody came back to within its grace: stopped as a lost reader. */
  const armGrace = (run: LocalRun) => {
    if (run.ended || run.readers.size > 0 || run.graceTimer) return;
    const wait = Math.max(0, Math.min(run.graceMs, run.detachedUntil - Date.now()));
    run.graceTimer = setTimeout(async () => {
      if (run.ended || run.readers.size > 0) {
        run.graceTimer = undefined;
        return;
      }
      // A reader on another replica counts while it touched the answer lately (every PRESENCE_MS
      // or so): read that afresh, the last lease renewal may be seconds old.
      await renew().catch(reportError);
      run.graceTimer = undefined;
      if (run.ended || run.readers.size > 0) return;
      if (Date.now() - run.remoteSeenAt < 2 * PRESENCE_MS) {
        run.graceTimer = setTimeout(() => {
          run.graceTimer = undefined;
          armGrace(run);
        }, PRESENCE_MS);
        return;
      }
      run.answer.disconnect();
    }, wait);
  };

  const localBody = (run: LocalRun, reader: Reader, rewrite: ChunkRewrite | undefined, onGone: () => void) =>
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          if (reader.cursor < run.base) {
            controller.enqueue(encoder.encode(errorEvent(TOO_LONG_TO_RESUME) + SSE_DONE));
            controller.close();
            run.readers.delete(reader);
            return;
          }
          if (reader.cursor < run.total) {
            let text = '';
            while (reader.cursor < run.total) {
              const json = run.chunks[reader.cursor - run.base] as string;
              reader.cursor++;
              text += sseEvent(rewrite ? await rewrite(json) : json);
            }
            controller.enqueue(encoder.encode(text));
            if (run.overflowAt !== undefined) trim(run);
            return;
          }
          if (run.ended) {
            controller.enqueue(encoder.encode(SSE_DONE));
            controller.close();
            run.readers.delete(reader);
            return;
          }
          await new Promise<void>((resolve) => run.waiters.push(resolve));
        }
      },
      cancel() {
        run.readers.delete(reader);
        onGone();
      },
    });

  const attachLocal = (run: LocalRun, rewrite: ChunkRewrite | undefined, onGone: () => void) => {
    if (run.overflowAt !== undefined) return tooLongBody();
    const reader: Reader = { cursor: 0 };
    run.readers.add(reader);
    if (run.graceTimer) {
      clearTimeout(run.graceTimer);
      run.graceTimer = undefined;
    }
    return localBody(run, reader, rewrite, onGone);
  };

  const follow = (answerId: string, wakeUp: () => void) => {
    let set = followers.get(answerId);
    if (!set) {
      set = new Set();
      followers.set(answerId, set);
    }
    set.add(wakeUp);
    return () => {
      set.delete(wakeUp);
      if (set.size === 0) followers.delete(answerId);
    };
  };

  /** A reader of an answer that runs (or ran) in another process: the store's log, then its live growth. */
  const remoteBody = (record: AnswerRecord, rewrite: ChunkRewrite | undefined) => {
    let cursor = 0;
    let finished = false;
    let signalled = false;
    let wakeUp: (() => void) | undefined;
    let lastTouch = 0;
    const unfollow = follow(record.answerId, () => {
      signalled = true;
      wakeUp?.();
    });
    const done = () => {
      finished = true;
      unfollow();
    };
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (!finished) {
          signalled = false;
          const current = await store.get(record.answerId);
          const chunks = await store.read(record.answerId, cursor);
          if (chunks.length > 0) {
            cursor += chunks.length;
            let text = '';
            for (const json of chunks) text += sseEvent(rewrite ? await rewrite(json) : json);
            controller.enqueue(encoder.encode(text));
            return;
          }
          if (!current || current.status === 'done') {
            controller.enqueue(encoder.encode((current?.overflow ? errorEvent(TOO_LONG_TO_RESUME) : '') + SSE_DONE));
            controller.close();
            done();
            return;
          }
          if (Date.now() - lastTouch >= PRESENCE_MS) {
            lastTouch = Date.now();
            await store.touchReader(record.answerId).catch(reportError);
          }
          if (signalled) continue;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, polling() && !store.progress ? POLL_MS : SAFETY_POLL_MS);
            wakeUp = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wakeUp = undefined;
        }
      },
      cancel: done,
    });
  };

  const tooLongBody = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(errorEvent(TOO_LONG_TO_RESUME) + SSE_DONE));
        controller.close();
      },
    });

  const onEvent = (event: AnswerEvent) => {
    if (event.kind === 'stop') {
      stopHere(event.answerId);
      return;
    }
    const set = followers.get(event.answerId);
    if (set) for (const wakeUp of set) wakeUp();
  };
  const unsubscribe = store.subscribe(onEvent);

  // Without pushed events: one poll for every answer read here that runs elsewhere, waking only the
  // readers of those that grew or ended (a store without `progress` leaves each reader to poll).
  const polledMarks = new Map<string, string>();
  let pollingProgress = false;
  const pollProgress = async () => {
    if (!polling() || !store.progress || followers.size === 0 || pollingProgress) return;
    pollingProgress = true;
    try {
      for (const { answerId, length, done } of await store.progress([...followers.keys()])) {
        const mark = `${length}:${done}`;
        if (polledMarks.get(answerId) === mark) continue;
        polledMarks.set(answerId, mark);
        for (const wakeUp of followers.get(answerId) ?? []) wakeUp();
      }
      for (const answerId of polledMarks.keys()) if (!followers.has(answerId)) polledMarks.delete(answerId);
    } finally {
      pollingProgress = false;
    }
  };
  const progressTimer = setInterval(() => void pollProgress().catch(reportError), POLL_MS);
  progressTimer.unref();

  const renew = async () => {
    if (runs.size === 0) return;
    const ids = [...runs.keys()];
    const held = new Map((await store.renew(owner, ids, LEASE_MS)).map((record) => [record.answerId, record]));
    for (const id of ids) {
      const run = runs.get(id);
      if (!run || run.ended) continue;
      const record = held.get(id);
      // Another process took the answer over (this one was cut off from the database too long).
      if (!record) run.answer.interrupt('failed');
      else if (record.stopRequested) run.answer.interrupt('stop');
      else run.remoteSeenAt = Math.max(run.remoteSeenAt, record.readerSeenAt);
    }
  };
  let renewing = false;
  let lastRenew = 0;
  const renewTimer = setInterval(() => {
    if (renewing || Date.now() - lastRenew < (polling() ? POLL_RENEW_MS : RENEW_MS) - 50) return;
    renewing = true;
    lastRenew = Date.now();
    renew()
      .catch(reportError)
      .finally(() => {
        renewing = false;
      });
  }, POLL_RENEW_MS);
  renewTimer.unref();

  const settleOrphans = async () => {
    for (const record of await store.claimExpired(owner, LEASE_MS)) {
      // An empty log: the answer never wrote a chunk (or never started); there is nothing to resume.
      let discard = false;
      try {
        const log = await store.read(record.answerId, 0);
        discard = log.length === 0;
        if (discard) continue;
        await options.settleOrphan(record, await messageFromLog(log));
        await store.append([{ answerId: record.answerId, firstSeq: log.length, chunks: ['{"type":"abort"}'] }]);
      } catch (error) {
        reportError(error);
      } finally {
        await store.release(record.answerId, owner, { discard }).catch(reportError);
      }
    }
    await store.purge(Date.now() - RESUME_WINDOW_MS);
  };
  let sweeping = false;
  const sweep = () => {
    if (sweeping) return;
    sweeping = true;
    settleOrphans()
      .catch(reportError)
      .finally(() => {
        sweeping = false;
      });
  };
  sweep();
  const sweepTimer = setInterval(sweep, SWEEP_MS);
  sweepTimer.unref();

  const pump = async (run: LocalRun, stream: ReadableStream<UIMessageChunk>) => {
    const reader = stream.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        push(run, value);
      }
    } catch (error) {
      reportError(error);
    } finally {
      if (run.graceTimer) clearTimeout(run.graceTimer);
      // The answer is stored (its save ran in the stream's end) and its slot given back before any
      // reader sees the end: whoever saw it end can send the next turn, or a retry, and be told so.
      try {
        await flush();
        await store.release(run.answerId, owner).catch(reportError);
      } finally {
        run.ended = true;
        if (run.graceTimer) clearTimeout(run.graceTimer);
        wake(run);
        runs.delete(run.answerId);
      }
    }
  };

  return {
    owner,
    store,
    async acquire(key, answer) {
      const claim = () => store.acquire(key, { ...answer, owner, leaseMs: LEASE_MS });
      let taken = await claim();
      if (!taken.acquired) {
        const { running } = taken;
        // A slot of this process that runs nothing here: a refused turn whose release failed (the
        // database was away). It is given back now rather than refusing the chat until its lease ends.
        if (running.owner === owner && !runs.has(running.answerId) && !starting.has(running.answerId)) {
          await store.release(running.answerId, owner, { discard: true });
          taken = await claim();
        }
      }
      if (taken.acquired) starting.add(answer.answerId);
      return taken;
    },
    abandon(answerId) {
      starting.delete(answerId);
      stoppedWhileStarting.delete(answerId);
      return store.release(answerId, owner, { discard: true });
    },
    start(answer) {
      starting.delete(answer.answerId);
      let settle!: () => void;
      const run: LocalRun = {
        answerId: answer.answerId,
        key: answer.key,
        answer: answer.answer,
        resumable: answer.resumable,
        graceMs: answer.graceMs,
        detachedUntil: answer.deadlineAt,
        chunks: [],
        base: 0,
        total: 0,
        logBytes: 0,
        overflowAt: undefined,
        overflowLogged: false,
        logged: 0,
        ended: false,
        readers: new Set(),
        waiters: [],
        graceTimer: undefined,
        remoteSeenAt: 0,
        settled: new Promise<void>((resolve) => {
          settle = resolve;
        }),
      };
      runs.set(run.answerId, run);
      void pump(run, answer.stream).finally(() => settle());
      if (stoppedWhileStarting.delete(run.answerId)) run.answer.interrupt('stop');
      // The request that started the answer: without the opt-in, losing it ends the answer, as always.
      return attachLocal(run, undefined, () => {
        if (!run.resumable) run.answer.disconnect();
        else armGrace(run);
      });
    },
    read(record, rewrite) {
      const run = runs.get(record.answerId);
      if (run) return attachLocal(run, rewrite, () => armGrace(run));
      if (record.overflow) return tooLongBody();
      return remoteBody(record, rewrite);
    },
    async stop(scope, stopOptions = {}) {
      const records = await store.requestStop(scope);
      for (const record of records) stopHere(record.answerId);
      const local = records.map((record) => runs.get(record.answerId));
      if (!stopOptions.wait) return;
      await Promise.all(
        records.map(async (record, index) => {
          const run = local[index];
          if (run) return run.settled;
          // Another process runs it: it stores the answer within a second or so of the signal.
          for (let waited = 0; waited < 5_000; waited += 100) {
            const current = await store.get(record.answerId);
            if (!current || current.status === 'done') return;
            await sleep(100);
          }
        }),
      );
    },
    async drain(timeoutMs) {
      const all = () => Promise.all([...runs.values()].map((run) => run.settled));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        all().then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (!timedOut) return;
      for (const run of runs.values()) run.answer.interrupt('failed');
      await all();
    },
    close() {
      clearInterval(renewTimer);
      clearInterval(progressTimer);
      clearInterval(sweepTimer);
      if (flushTimer) clearTimeout(flushTimer);
      unsubscribe();
    },
  };
}

const registries = new WeakMap<AnswerStore, AnswerRuns>();

/** The one `AnswerRuns` of a store in this process (made on first use with `options`). */
export function answerRunsFor(store: AnswerStore, options: AnswerRunsOptions): AnswerRuns {
  let runs = registries.get(store);
  if (!runs) {
    runs = createAnswerRuns(store, options);
    registries.set(store, runs);
  }
  return runs;
}
