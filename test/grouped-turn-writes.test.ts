import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseAnswerStore, type DatabaseAnswerStore } from '../src/chat/database-answer-store.js';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import type { Database } from '../src/db/database.js';
import { createAgent, createTenant } from '../src/tenancy/tenants.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';

/**
 * The writes a turn makes as it starts (its chat's slot, its question) go to the database in
 * groups when turns start together. Each turn still gets exactly its own outcome.
 */
let target: TestDatabaseTarget;
let database: Database;
let answers: DatabaseAnswerStore;
let agent: { tenantId: string; agentId: string };

beforeAll(async () => {
  target = await createTestDatabaseTarget();
  database = await target.open();
  answers = await createDatabaseAnswerStore(database);
  const tenant = await createTenant(database.db, 'Grouped');
  agent = { tenantId: tenant.id, agentId: (await createAgent(database.db, tenant.id, 'Grouped agent')).id };
});

afterAll(async () => {
  await answers.close();
  await database.close();
  await target.destroy();
});

const question = (text: string): UIMessage[] => [{ id: `m-${text}`, role: 'user', parts: [{ type: 'text', text }] }];

describe('turns that start together', () => {
  it('give one chat one slot, however many take it at once, and every other chat its own', async () => {
    const space = `${agent.tenantId}/${agent.agentId}`;
    const shared = { space, userId: 'user-1', chatId: 'shared' };
    const attempts = [
      ...Array.from({ length: 12 }, (_, index) => ({ key: shared, answerId: `shared-${index}` })),
      ...Array.from({ length: 30 }, (_, index) => ({
        key: { space, userId: `user-${index % 3}`, chatId: `own-${index}` },
        answerId: `own-${index}`,
      })),
    ];
    const outcomes = await Promise.all(
      attempts.map((attempt) =>
        answers.acquire(attempt.key, {
          answerId: attempt.answerId,
          userMessageId: `question-${attempt.answerId}`,
          owner: 'process-a',
          leaseMs: 30_000,
        }),
      ),
    );
    const sharedOutcomes = outcomes.slice(0, 12);
    const winners = sharedOutcomes.filter((outcome) => outcome.acquired);
    expect(winners).toHaveLength(1);
    const winner = attempts[sharedOutcomes.indexOf(winners[0] as (typeof outcomes)[number])]?.answerId;
    // Everyone else was told which answer runs.
    for (const outcome of sharedOutcomes) {
      if (!outcome.acquired) expect(outcome.running.answerId).toBe(winner);
    }
    expect(outcomes.slice(12).every((outcome) => outcome.acquired)).toBe(true);
    const rows = await database.db
      .selectFrom('chat_answers')
      .select(['answer_id', 'chat_id'])
      .where('space', '=', space)
      .where('status', '=', 'running')
      .execute();
    expect(rows).toHaveLength(31);
    expect(rows.filter((row) => row.chat_id === 'shared').map((row) => row.answer_id)).toEqual([winner]);
  });

  it("store every chat's question, and two saves of one chat at once land in the order they were made", async () => {
    const chats = createDatabaseChatStore(database.db, agent);
    const other = createDatabaseChatStore(database.db, agent);
    const scope = { userId: 'user-q' };
    await Promise.all([
      ...Array.from({ length: 40 }, (_, index) => chats.saveMessages(scope, `chat-${index}`, question(`q${index}`))),
      // One chat saved twice in the same turn, through two stores (two requests): the later save wins.
      chats.saveMessages(scope, 'twice', question('first')),
      other.saveMessages(scope, 'twice', question('second')),
    ]);
    for (let index = 0; index < 40; index++) {
      expect(await chats.loadMessages(scope, `chat-${index}`)).toEqual(question(`q${index}`));
    }
    expect(await chats.loadMessages(scope, 'twice')).toEqual(question('second'));
    const rows = await database.db
      .selectFrom('chats')
      .select('chat_id')
      .where('user_id', '=', 'user-q')
      .where('agent_id', '=', agent.agentId)
      .execute();
    expect(rows).toHaveLength(41);
  });
});
