import { createUIMessageStream, createUIMessageStreamResponse, streamText } from 'ai';
import { createLanguageModel } from '../src/chat/model.js';
import { turnMessage } from './load-script.js';
import { pinThisProcess, startBenchProcess } from './support.js';

type Stage = 'fetch' | 'provider' | 'streamText' | 'sse';

const STAGES: Record<Stage, string> = {
  fetch: "fetch of the model's SSE body, read to its end (no parsing)",
  provider: "+ the provider's stream (doStream: SSE parser, JSON and schema per event)",
  streamText: '+ streamText (fullStream)',
  sse: '+ UI message stream, finish handling and SSE encoding (what a chat route sends)',
};

async function drain(stream: ReadableStream<unknown>): Promise<void> {
  const reader = stream.getReader();
  while (!(await reader.read()).done) {
    // Only the work of producing the chunks is measured.
  }
}

/** One scripted turn of `deltas` deltas `delayMs` apart, consumed up to `stage`. */
function turn(
  baseUrl: string,
  stage: Stage,
  index: number,
  deltas: number,
  delayMs: number,
  round = 'floor',
): Promise<void> {
  const text = turnMessage({ kind: 'text', deltas, delayMs, tag: `${round}-${index}` });
  const model = createLanguageModel({ provider: 'openai-compatible', modelId: 'bench', baseUrl });
  switch (stage) {
    case 'fetch':
      return fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: text }] }),
      }).then((response) => drain(response.body as ReadableStream));
    case 'provider':
      return Promise.resolve(
        model.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text }] }] } as never),
      ).then((result) => drain(result.stream));
    case 'streamText':
      return drain(streamText({ model, prompt: text }).fullStream);
    case 'sse': {
      const stream = createUIMessageStream({
        originalMessages: [{ id: `u-${index}`, role: 'user', parts: [{ type: 'text', text }] }],
        execute: ({ writer }) => writer.merge(streamText({ model, prompt: text }).toUIMessageStream()),
        onFinish: () => undefined,
      });
      return drain(createUIMessageStreamResponse({ stream }).body as ReadableStream);
    }
  }
}

async function cpuPerTurnMs(run: () => Promise<void>, turns: number): Promise<number> {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / turns;
}

/**
 * The AI SDK's whole chat path (the `sse` stage: provider, `streamText`, UI message stream, SSE
 * encoding) for `streams` concurrent answers of `deltas` deltas `delayMs` apart, in this process:
 * its CPU per answer (ms), after a warm-up of `warmUp` such answers (the load bench warms the
 * service with as many). What the load bench sets the service's CPU per answer against, measured in
 * the same run with the same `ai` and provider.
 */
export async function sdkFloorCpuPerAnswer(
  baseUrl: string,
  load: { streams: number; deltas: number; delayMs: number; warmUp: number },
): Promise<number> {
  const answers = async (count: number, round: string) => {
    await Promise.all(
      Array.from({ length: count }, (_, index) => turn(baseUrl, 'sse', index, load.deltas, load.delayMs, round)),
    );
  };
  await answers(load.warmUp, 'warm');
  return cpuPerTurnMs(() => answers(load.streams, 'load'), load.streams);
}

/**
 * `npm run bench -- sdk-floor`: the CPU the AI SDK's own stages cost per chat stream, in this
 * process, with nothing of the service around them — the floor under the load bench's "service
 * CPU per stream". The same scripted model in its own process; each stage adds to the one before:
 * - 200 concurrent streams × 100 deltas 20 ms apart (the load bench's pure-chat turn);
 * - 400 one-delta answers one after another (what a turn costs whatever its length).
 */
export async function benchSdkFloor(options: { streams?: number } = {}) {
  const streams = options.streams ?? 200;
  const pinned = pinThisProcess(0);
  const modelServer = await startBenchProcess('scripted-model', { core: 1 });
  const baseUrl = `http://127.0.0.1:${modelServer.port}/v1`;
  try {
    const rows: Array<Record<string, string>> = [];
    const figures: Record<string, { concurrent: number; single: number }> = {};
    for (const stage of Object.keys(STAGES) as Stage[]) {
      // Warm-up: JIT, connections.
      await Promise.all(Array.from({ length: 20 }, (_, index) => turn(baseUrl, stage, index, 100, 0)));
      const concurrent = await cpuPerTurnMs(
        () => Promise.all(Array.from({ length: streams }, (_, index) => turn(baseUrl, stage, index, 100, 20))).then(),
        streams,
      );
      const single = await cpuPerTurnMs(async () => {
        for (let index = 0; index < 400; index += 1) await turn(baseUrl, stage, index, 1, 0);
      }, 400);
      figures[stage] = { concurrent, single };
      rows.push({
        stage: STAGES[stage],
        [`ms CPU per stream, ${streams} × 100 deltas`]: concurrent.toFixed(2),
        'ms CPU per 1-delta answer': single.toFixed(2),
      });
    }
    console.log(
      `\nAI SDK floor on ${process.version} (${pinned ? 'this process on core 0, the model on core 1' : 'unpinned'}); the load target is ≤ 10 ms per 100-delta stream`,
    );
    console.table(rows);
    return figures;
  } finally {
    await modelServer.stop();
  }
}
