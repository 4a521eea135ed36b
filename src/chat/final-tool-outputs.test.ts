import { dynamicTool, jsonSchema, streamText, type UIMessageChunk } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { dropFinalEchoes, finalToolOutput } from './final-tool-outputs.js';

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A model that calls `run` once, then stops. */
function callingModel() {
  let calls = 0;
  return new MockLanguageModelV3({
    doStream: async () => {
      calls += 1;
      const finish = calls === 1 ? 'tool-calls' : 'stop';
      return {
        stream: simulateReadableStream({
          chunks: [
            ...(calls === 1 ? [{ type: 'tool-call' as const, toolCallId: 'c1', toolName: 'run', input: '{}' }] : []),
            { type: 'finish' as const, finishReason: { unified: finish, raw: finish }, usage: USAGE },
          ],
        }),
      };
    },
  });
}

/** The tool output chunks of an answer whose one tool yields `values`, the last marked final when `mark`. */
async function outputChunks(values: object[], mark: boolean) {
  const run = dynamicTool({
    inputSchema: jsonSchema({ type: 'object' }),
    async *execute() {
      for (const [index, value] of values.entries()) {
        yield mark && index === values.length - 1 ? finalToolOutput(value) : value;
      }
    },
  });
  const result = streamText({ model: callingModel(), tools: { run }, prompt: 'run', stopWhen: () => false });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of result.toUIMessageStream()) chunks.push(...dropFinalEchoes(chunk));
  return chunks
    .filter((chunk) => chunk.type === 'tool-output-available')
    .map((chunk) => ({ output: chunk.output, preliminary: chunk.preliminary === true }));
}

describe('dropFinalEchoes', () => {
  it("drops the preliminary copy the AI SDK sends of a generator's marked last value, and only that", async () => {
    const values = [{ live: 1 }, { live: 2 }, { final: true }];
    expect(await outputChunks(values, false)).toEqual([
      { output: { live: 1 }, preliminary: true },
      { output: { live: 2 }, preliminary: true },
      { output: { final: true }, preliminary: true },
      { output: { final: true }, preliminary: false },
    ]);
    expect(await outputChunks(values, true)).toEqual([
      { output: { live: 1 }, preliminary: true },
      { output: { live: 2 }, preliminary: true },
      { output: { final: true }, preliminary: false },
    ]);
  });

  it('passes every other chunk, a final result equal to a marked one included', () => {
    const marked = finalToolOutput({ exitCode: 0 });
    const chunks: UIMessageChunk[] = [
      { type: 'tool-output-available', toolCallId: 'c1', output: { exitCode: 0 }, preliminary: true },
      { type: 'tool-output-available', toolCallId: 'c1', output: marked },
      { type: 'text-delta', id: 't', delta: 'hi' },
    ];
    expect(chunks.flatMap(dropFinalEchoes)).toEqual(chunks);
  });
});
