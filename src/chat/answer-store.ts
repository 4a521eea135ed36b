/**
 * Where resumable answers live between processes (provisional public API: it may still change in
 * a minor release). `createChatHandler({ answers: { store } })` runs every answer through it: the
 * store holds one lease per running answer, its chunk log, and the signals between processes
 * (new chunks, the end, a stop). The bundled `createDatabaseAnswerStore` implements it on SQLite
 * and PostgreSQL; a host can implement it on its own database. Without one, answers are not
 * resumable and `GET …/stream` answers 204.
 */

/** Whose chat an answer belongs to: `space` scopes the key as a chat store does (`''` when there is one scope). */
export interface AnswerKey {
  readonly space: string;
  readonly userId: string;
  readonly chatId: string;
}

/** A user's answers: of one chat, or (without `chatId`) of all their chats. */
export interface AnswerScope {
  readonly space: string;
  readonly userId: string;
  readonly chatId?: string;
}

/** What a store knows about one answer. */
export interface AnswerRecord {
  readonly answerId: string;
  readonly key: AnswerKey;
  /** The user message it answers. */
  readonly userMessageId: string;
  readonly status: 'running' | 'done';
  /** The process running it (`AnswerStore` callers name themselves). */
  readonly owner: string;
  readonly stopRequested: boolean;
  /** The log passed its bound: a new reader cannot get the whole answer. */
  readonly overflow: boolean;
  /** When a reader in another process last said it is attached (epoch ms; 0 when none did). */
  readonly readerSeenAt: number;
  readonly finishedAt: number | null;
}

/** A batch of new chunks (JSON text of UI message chunks, in order) of one answer. */
export interface AnswerChunks {
  readonly answerId: string;
  /** The sequence number of the first chunk (the log's length before it). */
  readonly firstSeq: number;
  readonly chunks: readonly string[];
  /** The log passed its bound with this batch (its chunks are the last it keeps). */
  readonly overflow?: boolean;
}

/** What a store tells every process: an answer's log grew, it ended, or someone asked it to stop. */
export interface AnswerProgress {
  readonly answerId: string;
  /** Chunks in its log. */
  readonly length: number;
  readonly done: boolean;
}

export interface AnswerEvent {
  readonly kind: 'chunks' | 'end' | 'stop';
  readonly answerId: string;
}

export interface AnswerStore {
  /**
   * Takes the chat's one slot for a running answer (a lease until `now + leaseMs`), or returns the
   * answer that holds it. Atomic across processes: two callers never both acquire.
   */
  acquire(
    key: AnswerKey,
    answer: { answerId: string; userMessageId: string; owner: string; leaseMs: number },
  ): Promise<{ acquired: true } | { acquired: false; running: AnswerRecord }>;
  /** Extends the leases `owner` still holds; returns their records (a stop request shows there). */
  renew(owner: string, answerIds: readonly string[], leaseMs: number): Promise<AnswerRecord[]>;
  /** Appends batches to their logs, then signals `chunks` for each. */
  append(batches: readonly AnswerChunks[]): Promise<void>;
  /** The log of an answer from sequence number `fromSeq` on (JSON text of each chunk). */
  read(answerId: string, fromSeq: number): Promise<string[]>;
  /**
   * Ends the lease: the answer is stored (`done`); signals `end`. With `discard`, the answer never
   * started (its turn was refused): its record is deleted instead, so it is never resumed.
   */
  release(answerId: string, owner: string, options?: { discard?: boolean }): Promise<void>;
  /** The chat's running answer, or the latest one that finished at or after `finishedSince`. */
  find(key: AnswerKey, finishedSince: number): Promise<AnswerRecord | undefined>;
  get(answerId: string): Promise<AnswerRecord | undefined>;
  /** Marks the running answers of `scope` to be stopped and signals `stop` for each; returns them. */
  requestStop(scope: AnswerScope): Promise<AnswerRecord[]>;
  /** Says a reader in this process is attached to the answer (keeps a detached answer alive). */
  touchReader(answerId: string): Promise<void>;
  /** Takes over running answers whose lease ran out (their process died), for `owner` to settle. */
  claimExpired(owner: string, leaseMs: number): Promise<AnswerRecord[]>;
  /** Deletes the stored answers of `scope` and their logs (the chat was deleted, the user erased). */
  forget(scope: AnswerScope): Promise<void>;
  /** Deletes answers, and their logs, that finished before `finishedBefore`. */
  purge(finishedBefore: number): Promise<void>;
  /**
   * For each of `answerIds` still stored: how many chunks its log holds, and whether it ended. With
   * `poll` delivery, one poller per process reads this for all the answers it follows, and only
   * their readers whose answer grew or ended read the log (without it, each reader polls).
   */
  progress?(answerIds: readonly string[]): Promise<AnswerProgress[]>;
  /** Receives the events of every process; returns the unsubscribe function. */
  subscribe(listener: (event: AnswerEvent) => void): () => void;
  /**
   * `push` (the default) when `subscribe` hears other processes' events as they happen; `poll`
   * when it cannot (a pooler that breaks `LISTEN`): readers then poll the log every 200 ms.
   */
  readonly delivery?: 'push' | 'poll';
}
