import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { answerRunsFor } from '../src/chat/answer-runs.js';
import { createChatHandler, storeFailedAnswer } from '../src/chat/create-chat-handler.js';
import { createDatabaseAnswerStore } from '../src/chat/database-answer-store.js';
import { createDatabaseChatStore } from '../src/chat/database-chat-store.js';
import type { AttachmentStorage } from '../src/chat/types.js';
import { openDatabase } from '../src/db/database.js';
import { median } from './support.js';

const ANSWERS = 200;
const DELTAS = 100;
const DELTA_DELAY_MS = 5;
const ROUNDS = 8;
/** Turns of a round of answers one at a time. */
const ALONE = 40;
const FINISH_USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: DELTAS, text: DELTAS, reasoning: 0 },
};

/** A model whose every call streams `DELTAS` words `DELTA_DELAY_MS` apart (the first at once). */
function pacedModel() {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream({
        async start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          for (let index = 0; index < DELTAS; index++) {
            controller.enqueue({ type: 'text-delta', id: 't', delta: `word${index} ` });
            await new Promise((resolve) => setTimeout(resolve, DELTA_DELAY_MS));
          }
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: FINISH_USAGE,
          });
          controller.close();
        },
      }),
    }),
  });
}

/** Attachments play no part here: nothing to sign or delete. */
const NO_STORAGE: AttachmentStorage = { resign: async () => new Map(), delete: async () => undefined };

/**
 * `npm run bench -- answers`: what resumable answers cost, in one process, against the same
 * engine without them, on the database `DATABASE_URL` names (SQLite in a temporary directory
 * without it). `createChatHandler` over the service's own chat store, with a model streaming 100
 * deltas 5 ms apart, 200 answers at once per round, rounds alternating between answers off (no
 * `answers`: the answer lives and dies with its response) and on (the database answer store,
 * every request with `X-Chat-Resumable: 1`: one acquire, the question stored first, the chunk
 * log written every 100 ms, the release). Prints CPU per answer and the first text-delta's
 * latency, medians of the rounds, and their ratio (targets: CPU ≤ +15 %, first delta of a turn
 * alone ≤ +1 ms; under the burst the first delta is reported, as it queues behind every turn's setup).
 */
export async function benchAnswers(options: { rounds?: number } = {}) {
  const rounds = options.rounds ?? ROUNDS;
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-bench-answers-'));
  const url = process.env.DATABASE_URL;
  const database = await openDatabase(
    url ? { kind: 'postgres', url } : { kind: 'sqlite', file: path.join(directory, 'mordn.db') },
  );
  const tenantId = `t-${Date.now()}`;
  const agentId = `a-${Date.now()}`;
  const now = Date.now();
  await database.db.insertInto('tenants').values({ id: tenantId, name: 'bench', created_at: now }).execute();
  await database.db
    .insertInto('agents')
    .values({ id: agentId, tenant_id: tenantId, name: 'bench', created_at: now })
    .execute();
  const agent = { tenantId, agentId };
  const chats = createDatabaseChatStore(database.db, agent);
  const answerStore = await createDatabaseAnswerStore(database);
  const runs = answerRunsFor(answerStore, {
    settleOrphan: (record, message) =>
      storeFailedAnswer(chats, { userId: record.key.userId }, record.key.chatId, message),
  });
  const model = pacedModel();
  const common = {
    getUserId: () => 'bench-user',
    model,
    store: chats,
    storage: NO_STORAGE,
    getHostedConfig: async () => ({ schemaVersion: 1 as const }),
  };
  const engines = {
    off: createChatHandler(common),
    on: createChatHandler({ ...common, answers: { store: answerStore, space: `${tenantId}/${agentId}` } }),
  };
  let turn = 0;
  const answer = async (mode: 'off' | 'on') => {
    turn += 1;
    const chatId = `${mode}-${turn}`;
    const started = performance.now();
    const response = await engines[mode].POST(
      new Request('http://bench/api/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(mode === 'on' ? { 'x-chat-resumable': '1' } : {}) },
        body: JSON.stringify({
          id: chatId,
          trigger: 'submit-message',
          messages: [{ id: `m-${chatId}`, role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
        }),
      }),
    );
    const decoder = new TextDecoder();
    let first: number | undefined;
    let text = '';
    for await (const chunk of response.body as ReadableStream<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (first === undefined && text.includes('"text-delta"')) first = performance.now() - started;
    }
    if (!text.includes('"type":"finish"')) throw new Error(`answer ${chatId} did not finish: ${text.slice(-200)}`);
    return first ?? Number.NaN;
  };
  /** One turn at a time: the first delta's latency with nothing else running (the chat bench's case). */
  const alone = async (mode: 'off' | 'on') => {
    const firsts: number[] = [];
    for (let index = 0; index < ALONE; index++) firsts.push(await answer(mode));
    return median(firsts);
  };
  const round = async (mode: 'off' | 'on') => {
    const cpu = process.cpuUsage();
    const firsts = await Promise.all(Array.from({ length: ANSWERS }, () => answer(mode)));
    const used = process.cpuUsage(cpu);
    return { cpuMs: (used.user + used.system) / 1000 / ANSWERS, firstMs: median(firsts) };
  };
  try {
    // Warm both paths up first (JIT, statement caches, the pool).
    await round('off');
    await round('on');
    const results = {
      off: [] as Array<{ cpuMs: number; firstMs: number }>,
      on: [] as Array<{ cpuMs: number; firstMs: number }>,
    };
    for (let index = 0; index < rounds; index++) {
      // Alternate which goes first, so drift falls on both.
      const order: Array<'off' | 'on'> = index % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) results[mode].push(await round(mode));
    }
    const single = { off: [] as number[], on: [] as number[] };
    for (let index = 0; index < rounds; index++) {
      const order: Array<'off' | 'on'> = index % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) single[mode].push(await alone(mode));
    }
    const aloneExtra = median(single.on) - median(single.off);
    const cpu = (mode: 'off' | 'on') => median(results[mode].map((each) => each.cpuMs));
    const firstDelta = (mode: 'off' | 'on') => median(results[mode].map((each) => each.firstMs));
    const ratio = cpu('on') / cpu('off');
    const extra = firstDelta('on') - firstDelta('off');
    const list = (mode: 'off' | 'on') => results[mode].map((each) => each.cpuMs.toFixed(2)).join(', ');
    console.log(
      `\nResumable answers, in process: ${ANSWERS} answers at once × ${DELTAS} deltas ${DELTA_DELAY_MS} ms apart, ` +
        `${rounds} rounds each, alternating (${url ? 'PostgreSQL' : 'SQLite'})`,
    );
    console.table([
      {
        measure: 'CPU per answer, answers off (median)',
        value: `${cpu('off').toFixed(2)} ms`,
        rounds: list('off'),
      },
      {
        measure: 'CPU per answer, resumable (median)',
        value: `${cpu('on').toFixed(2)} ms`,
        rounds: list('on'),
        target: `${((ratio - 1) * 100).toFixed(1)} % (≤ +15 %) ${ratio <= 1.15 ? 'MET' : 'NOT MET'}`,
      },
      {
        measure: `first text-delta, one turn at a time, answers off (median of ${rounds} × ${ALONE})`,
        value: `${median(single.off).toFixed(2)} ms`,
      },
      {
        measure: 'first text-delta, one turn at a time, resumable',
        value: `${median(single.on).toFixed(2)} ms`,
        target: `${aloneExtra >= 0 ? '+' : ''}${aloneExtra.toFixed(2)} ms (≤ +1 ms) ${aloneExtra <= 1 ? 'MET' : 'NOT MET'}`,
      },
      {
        measure: `first text-delta, ${ANSWERS} at once, answers off (median of round medians)`,
        value: `${firstDelta('off').toFixed(2)} ms`,
      },
      {
        measure: `first text-delta, ${ANSWERS} at once, resumable`,
        value: `${firstDelta('on').toFixed(2)} ms`,
        target: `${extra >= 0 ? '+' : ''}${extra.toFixed(2)} ms (reported: the burst queues every turn's setup)`,
      },
    ]);
    return { cpuRatio: ratio, firstDeltaExtraMs: aloneExtra, burstFirstDeltaExtraMs: extra };
  } finally {
    runs.close();
    await answerStore.close();
    await database.close();
    await rm(directory, { recursive: true, force: true });
  }
}
