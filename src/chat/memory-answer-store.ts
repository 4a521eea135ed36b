import { EventEmitter } from 'node:events';
import type { AnswerEvent, AnswerKey, AnswerRecord, AnswerScope, AnswerStore } from './answer-store.js';

interface Entry {
  record: AnswerRecord;
  leaseUntil: number;
  log: string[];
}

const inScope = (key: AnswerKey, scope: AnswerScope) =>
  key.space === scope.space &&
  key.userId === scope.userId &&
  (scope.chatId === undefined || key.chatId === scope.chatId);

/**
 * An `AnswerStore` in this process's memory, for a host that runs in one long-lived process
 * (`next start` on one machine): answers resume across tabs and reloads, but not across
 * processes, and a restart forgets them. Several processes need a shared store.
 *
 * @example
 * const answers = { store: createMemoryAnswerStore() };
 * export const { GET, POST, DELETE, OPTIONS } = createChatHandler({ ...options, answers });
 */
export function createMemoryAnswerStore(): AnswerStore {
  const entries = new Map<string, Entry>();
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const emit = (kind: AnswerEvent['kind'], answerId: string) =>
    queueMicrotask(() => events.emit('event', { kind, answerId }));
  const update = (entry: Entry, changes: Partial<AnswerRecord>) => {
    entry.record = { ...entry.record, ...changes };
    return entry.record;
  };
  const running = (key: AnswerKey) =>
    [...entries.values()].find(
      (entry) =>
        entry.record.status === 'running' &&
        entry.record.key.space === key.space &&
        entry.record.key.userId === key.userId &&
        entry.record.key.chatId === key.chatId,
    );

  return {
    async acquire(key, answer) {
      const holder = running(key);
      if (holder) return { acquired: false, running: holder.record };
      entries.set(answer.answerId, {
        leaseUntil: Date.now() + answer.leaseMs,
        log: [],
        record: {
          answerId: answer.answerId,
          key: { ...key },
          userMessageId: answer.userMessageId,
          status: 'running',
          owner: answer.owner,
          stopRequested: false,
          overflow: false,
          readerSeenAt: 0,
          finishedAt: null,
        },
      });
      return { acquired: true };
    },
    async renew(owner, answerIds, leaseMs) {
      const held: AnswerRecord[] = [];
      for (const answerId of answerIds) {
        const entry = entries.get(answerId);
        if (!entry || entry.record.owner !== owner || entry.record.status !== 'running') continue;
        entry.leaseUntil = Date.now() + leaseMs;
        held.push(entry.record);
      }
      return held;
    },
    async append(batches) {
      for (const batch of batches) {
        const entry = entries.get(batch.answerId);
        if (!entry) continue;
        entry.log.splice(batch.firstSeq, batch.chunks.length, ...batch.chunks);
        if (batch.overflow) update(entry, { overflow: true });
        emit('chunks', batch.answerId);
      }
    },
    async read(answerId, fromSeq) {
      return entries.get(answerId)?.log.slice(fromSeq) ?? [];
    },
    async release(answerId, owner, options) {
      const entry = entries.get(answerId);
      if (!entry || entry.record.owner !== owner) return;
      if (options?.discard) entries.delete(answerId);
      else update(entry, { status: 'done', finishedAt: Date.now() });
      emit('end', answerId);
    },
    async find(key, finishedSince) {
      let latest: AnswerRecord | undefined;
      for (const { record } of entries.values()) {
        if (!inScope(record.key, key)) continue;
        if (record.status !== 'running' && (record.finishedAt ?? 0) < finishedSince) continue;
        if (record.status === 'running') return record;
        if (!latest || (record.finishedAt ?? 0) > (latest.finishedAt ?? 0)) latest = record;
      }
      return latest;
    },
    async get(answerId) {
      return entries.get(answerId)?.record;
    },
    async requestStop(scope) {
      const stopped: AnswerRecord[] = [];
      for (const entry of entries.values()) {
        if (entry.record.status !== 'running' || !inScope(entry.record.key, scope)) continue;
        stopped.push(update(entry, { stopRequested: true }));
        emit('stop', entry.record.answerId);
      }
      return stopped;
    },
    async touchReader(answerId) {
      const entry = entries.get(answerId);
      if (entry) update(entry, { readerSeenAt: Date.now() });
    },
    async claimExpired(owner, leaseMs) {
      const now = Date.now();
      const claimed: AnswerRecord[] = [];
      for (const entry of entries.values()) {
        if (entry.record.status !== 'running' || entry.leaseUntil >= now) continue;
        entry.leaseUntil = now + leaseMs;
        claimed.push(update(entry, { owner }));
      }
      return claimed;
    },
    async forget(scope) {
      for (const [answerId, entry] of entries) {
        if (entry.record.status === 'done' && inScope(entry.record.key, scope)) entries.delete(answerId);
      }
    },
    async purge(finishedBefore) {
      for (const [answerId, entry] of entries) {
        if (entry.record.status === 'done' && (entry.record.finishedAt ?? 0) < finishedBefore) entries.delete(answerId);
      }
    },
    subscribe(listener) {
      events.on('event', listener);
      return () => events.off('event', listener);
    },
  };
}
