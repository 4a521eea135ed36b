import { streamText } from 'ai';
import { createLanguageModel } from '../src/chat/model.js';
import { startScriptedModelServer } from '../test/support/scripted-model-server.js';
import {
  ADMIN_TOKEN,
  chatBenchSetting,
  median,
  provisionAgent,
  RESUMABLE_HEADERS,
  startBenchServer,
} from './support.js';

/** Turns sent so far: every turn is a new chat (a message answered once is not answered again). */
let turns = 0;

/** Time from sending to the first text delta, and to the last, of one chat turn over HTTP. */
export async function timeChatTurn(base: string, key: string, name: string, text: string) {
  turns += 1;
  const chatId = `${name}-${turns}`;
  const started = performance.now();
  const response = await fetch(`${base}/v1/chat`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'x-chat-user': 'bench-user',
      'content-type': 'application/json',
      ...RESUMABLE_HEADERS,
    },
    body: JSON.stringify({
      id: chatId,
      trigger: 'submit-message',
      messages: [{ id: `m-${chatId}`, role: 'user', parts: [{ type: 'text', text }] }],
    }),
  });
  if (!response.ok || !response.body) throw new Error(`chat answered ${response.status}`);
  let first: number | undefined;
  let body = '';
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    const text = decoder.decode(chunk, { stream: true });
    if (first === undefined && text.includes('"type":"text-delta"')) first = performance.now();
    body += text;
  }
  const last = performance.now();
  // Tokens, not `text-delta` events: the engine sends deltas that follow within 10 ms as one.
  const tokens = body.split(' x').length - 1 + (body.includes('"delta":"Hi') ? 1 : 0);
  return { firstMs: (first ?? last) - started, totalMs: last - started, streamMs: last - (first ?? last), tokens };
}

/** The same turn with `streamText` in this process, against the same model endpoint. */
async function timeInProcess(baseUrl: string, text: string) {
  const model = createLanguageModel({ provider: 'openai-compatible', modelId: 'bench', baseUrl });
  const started = performance.now();
  const result = streamText({ model, prompt: text });
  let first: number | undefined;
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta' && first === undefined) first = performance.now();
  }
  return { firstMs: (first ?? performance.now()) - started };
}

/**
 * Chat streaming overhead, against a baseline measured in the same run:
 * - time to the first `text-delta` through `POST /v1/chat` (auth, config, history, projection,
 *   UI message stream over HTTP) vs `streamText` in-process on the same model endpoint, whose
 *   first token is immediate (target ≤ +3 ms p50);
 * - per-token cost of a 20k-token answer vs a 2k-token one (target ≤ 1.3×).
 */
export async function benchChat(options: { samples?: number } = {}) {
  const samples = options.samples ?? 100;
  const model = await startScriptedModelServer((request) => {
    const prompt = JSON.stringify(request.messages);
    const tokens = /TOKENS (\d+)/.exec(prompt)?.[1];
    return { text: Array.from({ length: tokens ? Number(tokens) : 1 }, (_, index) => (index === 0 ? 'Hi' : ' x')) };
  });
  const server = await startBenchServer('mordn', {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_MODEL: 'openai-compatible:bench',
    MORDN_MODEL_BASE_URL: model.baseUrl,
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const key = await provisionAgent(base, false);
    for (let index = 0; index < 20; index += 1) {
      await timeChatTurn(base, key, `warm-${index}`, 'hello');
      await timeInProcess(model.baseUrl, 'hello');
    }
    const service: number[] = [];
    const inProcess: number[] = [];
    for (let index = 0; index < samples; index += 1) {
      service.push((await timeChatTurn(base, key, `first-${index}`, 'hello')).firstMs);
      inProcess.push((await timeInProcess(model.baseUrl, 'hello')).firstMs);
    }
    const perToken = async (tokens: number, rounds: number) => {
      const costs: number[] = [];
      for (let index = 0; index < rounds; index += 1) {
        const turn = await timeChatTurn(base, key, `tokens-${tokens}-${index}`, `TOKENS ${tokens}`);
        if (turn.tokens !== tokens) throw new Error(`expected ${tokens} tokens, saw ${turn.tokens}`);
        costs.push((turn.streamMs * 1000) / turn.tokens);
      }
      return median(costs);
    };
    await perToken(2_000, 2);
    const small = await perToken(2_000, 9);
    const large = await perToken(20_000, 5);
    const extra = median(service) - median(inProcess);
    console.log(
      `\nChat: medians of ${samples} turns (scripted OpenAI-compatible model on loopback, ${chatBenchSetting()})`,
    );
    console.table([
      { measure: 'first text-delta, streamText in-process', 'median ms': median(inProcess).toFixed(2) },
      {
        measure: 'first text-delta, POST /v1/chat',
        'median ms': median(service).toFixed(2),
        overhead: `+${extra.toFixed(2)} ms (≤ +3 ms)`,
      },
      { measure: 'per token, 2k-token answer', 'µs/token': small.toFixed(1) },
      {
        measure: 'per token, 20k-token answer',
        'µs/token': large.toFixed(1),
        ratio: `${(large / small).toFixed(3)}× (≤ 1.3×)`,
      },
    ]);
    return { firstTokenOverheadMs: extra, perTokenRatio: large / small };
  } finally {
    await server.stop();
    await model.close();
  }
}
