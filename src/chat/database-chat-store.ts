import type { UIMessage } from 'ai';
import type { Insertable, Kysely } from 'kysely';
import { groupedWrites } from '../db/grouped-writes.js';
import type { ChatsTable, DatabaseSchema } from '../db/schema.js';
import { isServiceError } from '../errors.js';
import type { ChatScope, ChatStore } from './types.js';

/** How long a save keeps retrying while the database is unavailable (a restart takes about a second). */
const SAVE_RETRY_MS = 10_000;
/** Chats of one grouped upsert (7 parameters each, well under SQLite's bound-parameter limit). */
const UPSERTS_PER_STATEMENT = 200;
/** Characters of messages in one grouped upsert: long histories are saved in statements of their own. */
const UPSERT_MAX_CHARACTERS = 4 * 1024 * 1024;

/**
 * Runs `save` again, with growing pauses, while it fails with `DATABASE_UNAVAILABLE`. A save comes
 * after the answer was streamed to the user, so giving up at once would lose an answer the user
 * has already seen; the upsert is idempotent, so a repeated save cannot duplicate anything.
 */
async function retryWhileUnavailable(save: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + SAVE_RETRY_MS;
  for (let pause = 50; ; pause = Math.min(pause * 2, 1_000)) {
    try {
      await save();
      return;
    } catch (error) {
      if (!isServiceError(error) || error.code !== 'DATABASE_UNAVAILABLE' || Date.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

type ChatRow = Insertable<ChatsTable>;

/** The grouped chat upsert of each database (stores are made per request; the group is the database's). */
const upserts = new WeakMap<Kysely<DatabaseSchema>, (row: ChatRow) => Promise<void>>();

/**
 * Creates or replaces a chat's messages. Saves made together (the questions of turns that start
 * at once) go in one statement.
 */
function upsertChat(db: Kysely<DatabaseSchema>, row: ChatRow): Promise<void> {
  let upsert = upserts.get(db);
  if (!upsert) {
    upsert = groupedWrites(
      async (rows: readonly ChatRow[]) => {
        await db
          .insertInto('chats')
          .values([...rows])
          .onConflict((conflict) =>
            conflict.columns(['tenant_id', 'agent_id', 'user_id', 'chat_id']).doUpdateSet((eb) => ({
              messages: eb.ref('excluded.messages'),
              updated_at: eb.ref('excluded.updated_at'),
            })),
          )
          .execute();
        return rows.map(() => undefined);
      },
      { maxGroup: UPSERTS_PER_STATEMENT, weigh: (row) => row.messages.length, maxWeight: UPSERT_MAX_CHARACTERS },
    );
    upserts.set(db, upsert);
  }
  return upsert(row);
}

/**
 * The service's chat store: one row per `(tenant, agent, user, chat id)`, bound to the tenant and
 * agent of the authenticated key. The scope's user completes the key; ids match exactly.
 */
export function createDatabaseChatStore(
  db: Kysely<DatabaseSchema>,
  agent: { tenantId: string; agentId: string },
): ChatStore {
  const owned = (scope: ChatScope, chatId: string) =>
    db
      .selectFrom('chats')
      .where('tenant_id', '=', agent.tenantId)
      .where('agent_id', '=', agent.agentId)
      .where('user_id', '=', scope.userId)
      .where('chat_id', '=', chatId);

  return {
    async loadMessages(scope, chatId) {
      const row = await owned(scope, chatId).select('messages').executeTakeFirst();
      return row ? (JSON.parse(row.messages) as UIMessage[]) : undefined;
    },
    async saveMessages(scope, chatId, messages, options = {}) {
      const now = Date.now();
      const json = JSON.stringify(messages);
      if (options.mustExist) {
        await retryWhileUnavailable(() =>
          db
            .updateTable('chats')
            .set({ messages: json, updated_at: now })
            .where('tenant_id', '=', agent.tenantId)
            .where('agent_id', '=', agent.agentId)
            .where('user_id', '=', scope.userId)
            .where('chat_id', '=', chatId)
            .execute(),
        );
        return;
      }
      await retryWhileUnavailable(() =>
        upsertChat(db, {
          tenant_id: agent.tenantId,
          agent_id: agent.agentId,
          user_id: scope.userId,
          chat_id: chatId,
          messages: json,
          created_at: now,
          updated_at: now,
        }),
      );
    },
    async deleteChat(scope, chatId) {
      const result = await db
        .deleteFrom('chats')
        .where('tenant_id', '=', agent.tenantId)
        .where('agent_id', '=', agent.agentId)
        .where('user_id', '=', scope.userId)
        .where('chat_id', '=', chatId)
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
}
