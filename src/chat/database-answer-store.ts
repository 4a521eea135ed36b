import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { type Selectable, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { groupedWrites } from '../db/grouped-writes.js';
import type { ChatAnswersTable } from '../db/schema.js';
import type { AnswerEvent, AnswerKey, AnswerRecord, AnswerStore } from './answer-store.js';

/** The notification channel of answer events (payload `<kind letter>:<id>,<id>…`). */
const CHANNEL = 'mordn_answers';
/** PostgreSQL's payload limit is 8000 bytes; ids are 36 characters. */
const IDS_PER_NOTIFICATION = 150;
/** How long the probe notification may take to come back before the store polls instead. */
const PROBE_MS = 2_000;
/** Rows of one multi-row insert (well under SQLite's bound-parameter limit). */
const ROWS_PER_INSERT = 200;

const KIND_LETTERS = { chunks: 'c', end: 'e', stop: 's' } as const;
const KINDS_BY_LETTER: Record<string, AnswerEvent['kind']> = { c: 'chunks', e: 'end', s: 'stop' };

/** The service's answer space of an agent: its keys are scoped like its chats. */
export function agentSpace(agent: { tenantId: string; agentId: string }): string {
  return `${agent.tenantId}/${agent.agentId}`;
}

/** The agent of a service answer space. */
export function agentOfSpace(space: string): { tenantId: string; agentId: string } {
  const [tenantId = '', agentId = ''] = space.split('/');
  return { tenantId, agentId };
}

export interface DatabaseAnswerStore extends AnswerStore {
  /** Stops listening. */
  close(): Promise<void>;
}

function toRecord(row: Selectable<ChatAnswersTable>): AnswerRecord {
  return {
    answerId: row.answer_id,
    key: { space: row.space, userId: row.user_id, chatId: row.chat_id },
    userMessageId: row.user_message_id,
    status: row.status === 'running' ? 'running' : 'done',
    owner: row.owner,
    stopRequested: Number(row.stop_requested) === 1,
    overflow: Number(row.overflow) === 1,
    readerSeenAt: Number(row.reader_seen_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
  };
}

/**
 * The bundled `AnswerStore`, on the service's database. Events reach every process through
 * PostgreSQL `LISTEN/NOTIFY` on a dedicated connection (sent in the transaction that wrote what
 * they announce), or stay in the process on SQLite, which serves one process. With
 * `delivery: 'poll'` (a pooler in transaction mode, which breaks `LISTEN`), no connection listens
 * and readers poll instead.
 */
export async function createDatabaseAnswerStore(
  database: Database,
  options: { delivery?: 'push' | 'poll'; onListenError?: (error: unknown) => void } = {},
): Promise<DatabaseAnswerStore> {
  const { db } = database;
  const local = new EventEmitter();
  local.setMaxListeners(0);
  let delivery: 'push' | 'poll' = options.delivery ?? 'push';
  let stopListening: (() => Promise<void>) | undefined;

  let probe: { payload: string; heard: () => void } | undefined;
  const deliver = (payload: string) => {
    if (payload === probe?.payload) return probe.heard();
    const letter = payload[0] ?? '';
    const kind = KINDS_BY_LETTER[letter];
    if (!kind) return;
    for (const answerId of payload.slice(2).split(',')) if (answerId) local.emit('event', { kind, answerId });
  };
  const listening = database.dialect === 'postgres' && delivery === 'push' && database.listen !== undefined;
  if (listening && database.listen) {
    try {
      stopListening = await database.listen(CHANNEL, deliver);
      // A pooler that hands out connections per transaction accepts LISTEN and then never
      // delivers: only a notification that comes back proves the channel works.
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no notification came back on "${CHANNEL}" within ${PROBE_MS} ms`)),
          PROBE_MS,
        );
        probe = {
          payload: `p:${randomUUID()}`,
          heard: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        db.selectNoFrom((eb) => eb.fn('pg_notify', [eb.val(CHANNEL), eb.val(probe?.payload)]).as('sent'))
          .execute()
          .catch(reject);
      });
    } catch (error) {
      // Without a working listening connection, readers in other processes poll.
      await stopListening?.();
      stopListening = undefined;
      delivery = 'poll';
      options.onListenError?.(error);
    }
  }

  /** Tells every process; on PostgreSQL inside `executor`'s transaction, so it arrives with what it announces. */
  const signal = async (executor: typeof db, kind: AnswerEvent['kind'], answerIds: readonly string[]) => {
    if (answerIds.length === 0) return;
    if (database.dialect !== 'postgres') {
      for (const answerId of answerIds) queueMicrotask(() => local.emit('event', { kind, answerId }));
      return;
    }
    for (let start = 0; start < answerIds.length; start += IDS_PER_NOTIFICATION) {
      const payload = `${KIND_LETTERS[kind]}:${answerIds.slice(start, start + IDS_PER_NOTIFICATION).join(',')}`;
      await executor.selectNoFrom((eb) => eb.fn('pg_notify', [eb.val(CHANNEL), eb.val(payload)]).as('sent')).execute();
    }
  };

  const ofKey = (key: AnswerKey) =>
    db
      .selectFrom('chat_answers')
      .selectAll()
      .where('space', '=', key.space)
      .where('user_id', '=', key.userId)
      .where('chat_id', '=', key.chatId);

  /** Takes chats' slots; the turns that start together take theirs in one statement. */
  const insertSlot = groupedWrites(
    async (rows: readonly SlotRow[]) => {
      const inserted = new Set(
        database.dialect === 'postgres'
          ? await insertSlotsLightly(db, rows)
          : (
              await db
                .insertInto('chat_answers')
                .values([...rows])
                .onConflict((conflict) => conflict.doNothing())
                .returning('answer_id')
                .execute()
            ).map((row) => row.answer_id),
      );
      return rows.map((row) => inserted.has(row.answer_id));
    },
    { maxGroup: ROWS_PER_INSERT },
  );

  const store: DatabaseAnswerStore = {
    get delivery() {
      return delivery;
    },
    async acquire(key, answer) {
      for (let attempt = 0; attempt < 3; attempt++) {
        const now = Date.now();
        const row = {
          answer_id: answer.answerId,
          space: key.space,
          user_id: key.userId,
          chat_id: key.chatId,
          user_message_id: answer.userMessageId,
          status: 'running',
          owner: answer.owner,
          lease_until: now + answer.leaseMs,
          started_at: now,
        };
        const inserted = await insertSlot(row);
        if (inserted) return { acquired: true };
        const running = await ofKey(key).where('status', '=', 'running').executeTakeFirst();
        // The running answer may have ended between the two statements: try again.
        if (running) return { acquired: false, running: toRecord(running) };
      }
      throw new Error('could not acquire the answer slot of a chat');
    },
    async renew(owner, answerIds, leaseMs) {
      if (answerIds.length === 0) return [];
      const rows = await db
        .updateTable('chat_answers')
        .set({ lease_until: Date.now() + leaseMs })
        .where('owner', '=', owner)
        .where('status', '=', 'running')
        .where('answer_id', 'in', [...answerIds])
        .returningAll()
        .execute();
      return rows.map(toRecord);
    },
    async append(batches) {
      if (batches.length === 0) return;
      await db.transaction().execute(async (trx) => {
        const rows = batches
          .filter((batch) => batch.chunks.length > 0)
          .map((batch) => ({
            answer_id: batch.answerId,
            first_seq: batch.firstSeq,
            count: batch.chunks.length,
            data: batch.chunks.join('\n'),
          }));
        for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
          await trx
            .insertInto('chat_answer_chunks')
            .values(rows.slice(start, start + ROWS_PER_INSERT))
            .execute();
        }
        const overflowed = batches.filter((batch) => batch.overflow).map((batch) => batch.answerId);
        if (overflowed.length > 0) {
          await trx.updateTable('chat_answers').set({ overflow: 1 }).where('answer_id', 'in', overflowed).execute();
        }
        await signal(
          trx,
          'chunks',
          batches.map((batch) => batch.answerId),
        );
      });
    },
    async read(answerId, fromSeq) {
      const rows = await db
        .selectFrom('chat_answer_chunks')
        .select(['first_seq', 'data'])
        .where('answer_id', '=', answerId)
        .where((eb) => eb(eb('first_seq', '+', eb.ref('count')), '>', fromSeq))
        .orderBy('first_seq')
        .execute();
      const chunks: string[] = [];
      for (const row of rows) {
        const lines = row.data.split('\n');
        chunks.push(...lines.slice(Math.max(0, fromSeq - Number(row.first_seq))));
      }
      return chunks;
    },
    async release(answerId, owner, options) {
      await db.transaction().execute(async (trx) => {
        if (options?.discard) {
          await trx.deleteFrom('chat_answer_chunks').where('answer_id', '=', answerId).execute();
          await trx.deleteFrom('chat_answers').where('answer_id', '=', answerId).where('owner', '=', owner).execute();
        } else {
          await trx
            .updateTable('chat_answers')
            .set({ status: 'done', finished_at: Date.now() })
            .where('answer_id', '=', answerId)
            .where('owner', '=', owner)
            .execute();
        }
        await signal(trx, 'end', [answerId]);
      });
    },
    async find(key, finishedSince) {
      const row = await ofKey(key)
        .where((eb) => eb.or([eb('status', '=', 'running'), eb('finished_at', '>=', finishedSince)]))
        .orderBy('started_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },
    async progress(answerIds) {
      if (answerIds.length === 0) return [];
      const rows = await db
        .selectFrom('chat_answers as a')
        .leftJoin('chat_answer_chunks as c', 'c.answer_id', 'a.answer_id')
        .select((eb) => [
          'a.answer_id',
          'a.status',
          eb.fn.coalesce(eb.fn.max(eb('c.first_seq', '+', eb.ref('c.count'))), eb.lit(0)).as('length'),
        ])
        .where('a.answer_id', 'in', answerIds)
        .groupBy(['a.answer_id', 'a.status'])
        .execute();
      return rows.map((row) => ({ answerId: row.answer_id, length: Number(row.length), done: row.status === 'done' }));
    },
    async get(answerId) {
      const row = await db.selectFrom('chat_answers').selectAll().where('answer_id', '=', answerId).executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },
    async requestStop(scope) {
      return db.transaction().execute(async (trx) => {
        let query = trx
          .updateTable('chat_answers')
          .set({ stop_requested: 1 })
          .where('space', '=', scope.space)
          .where('user_id', '=', scope.userId)
          .where('status', '=', 'running');
        if (scope.chatId !== undefined) query = query.where('chat_id', '=', scope.chatId);
        const rows = await query.returningAll().execute();
        await signal(
          trx,
          'stop',
          rows.map((row) => row.answer_id),
        );
        return rows.map(toRecord);
      });
    },
    async touchReader(answerId) {
      await db
        .updateTable('chat_answers')
        .set({ reader_seen_at: Date.now() })
        .where('answer_id', '=', answerId)
        .execute();
    },
    async claimExpired(owner, leaseMs) {
      const now = Date.now();
      const rows = await db
        .updateTable('chat_answers')
        .set({ owner, lease_until: now + leaseMs })
        .where('status', '=', 'running')
        .where('lease_until', '<', now)
        .returningAll()
        .execute();
      return rows.map(toRecord);
    },
    async forget(scope) {
      let stored = db
        .selectFrom('chat_answers')
        .select('answer_id')
        .where('space', '=', scope.space)
        .where('user_id', '=', scope.userId)
        .where('status', '=', 'done');
      if (scope.chatId !== undefined) stored = stored.where('chat_id', '=', scope.chatId);
      const answerIds = (await stored.execute()).map((row) => row.answer_id);
      if (answerIds.length === 0) return;
      await db.deleteFrom('chat_answer_chunks').where('answer_id', 'in', answerIds).execute();
      await db.deleteFrom('chat_answers').where('answer_id', 'in', answerIds).execute();
    },
    async purge(finishedBefore) {
      const finished = db
        .selectFrom('chat_answers')
        .select('answer_id')
        .where('status', '=', 'done')
        .where('finished_at', '<', finishedBefore);
      await db.deleteFrom('chat_answer_chunks').where('answer_id', 'in', finished).execute();
      await db
        .deleteFrom('chat_answers')
        .where('status', '=', 'done')
        .where('finished_at', '<', finishedBefore)
        .execute();
    },
    subscribe(listener) {
      local.on('event', listener);
      return () => local.off('event', listener);
    },
    async close() {
      await stopListening?.();
    },
  };
  return store;
}

type SlotRow = Omit<Selectable<ChatAnswersTable>, 'stop_requested' | 'reader_seen_at' | 'overflow' | 'finished_at'>;

/**
 * Takes chats' slots on PostgreSQL in one statement that does not wait for its WAL to reach the
 * disk (`synchronous_commit` off for its own transaction only): the row lives for the length of
 * an answer, and the flush it would wait for sits between a turn and its first delta. A database
 * crash in the next fraction of a second can lose a slot; the answer's renewals then find no
 * lease and it ends as if its process had died. Returns the answer ids whose slot was taken.
 */
async function insertSlotsLightly(db: Database['db'], rows: readonly SlotRow[]): Promise<string[]> {
  const values = sql.join(
    rows.map(
      (row) => sql`(${row.answer_id}::text, ${row.space}::text, ${row.user_id}::text, ${row.chat_id}::text,
        ${row.user_message_id}::text, ${row.status}::text, ${row.owner}::text, ${row.lease_until}::bigint,
        ${row.started_at}::bigint)`,
    ),
  );
  const { rows: inserted } = await sql<{ answer_id: string }>`
    insert into chat_answers (answer_id, space, user_id, chat_id, user_message_id, status, owner, lease_until, started_at)
    select * from (values ${values}) as slot (answer_id, space, user_id, chat_id, user_message_id, status, owner, lease_until, started_at)
    where set_config('synchronous_commit', 'off', true) is not null
    on conflict do nothing
    returning answer_id`.execute(db);
  return inserted.map((row) => row.answer_id);
}
