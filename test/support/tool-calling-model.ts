import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';

/** One step of a scripted answer: a tool call, answered by the tool before the next step. */
export interface ScriptedToolStep {
  toolName: string;
  input: Record<string, unknown>;
}

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** What a mocked model's `doStream` resolves to. */
type StreamResult = Awaited<ReturnType<MockLanguageModelV3['doStream']>>;

/**
 * What a mocked model's `doStream` resolves to for an answer of `text` that then stops (only the
 * stop when `text` is empty).
 *
 * @example
 * const model = new MockLanguageModelV3({ doStream: async () => textAnswer('Hi!') });
 */
export function textAnswer(text: string): StreamResult {
  const finish = { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE } as const;
  if (!text) return { stream: simulateReadableStream({ chunks: [finish] }) };
  return {
    stream: simulateReadableStream({
      chunks: [
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: text },
        { type: 'text-end', id: 't' },
        finish,
      ],
    }),
  };
}

/**
 * A mocked language model that calls `steps`' tools, one per model call, then answers `text`
 * (nothing at all when `text` is empty). `prompts` records every prompt it was sent, as JSON.
 *
 * @example
 * const { model } = toolCallingModel([{ toolName: 'sandbox_exec', input: { command: 'ls' } }], 'Listed.');
 */
export function toolCallingModel(steps: readonly ScriptedToolStep[], text = 'Done.') {
  const prompts: string[] = [];
  let calls = 0;
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      const step = steps[calls];
      calls += 1;
      if (step) {
        return {
          stream: simulateReadableStream({
            chunks: [
              {
                type: 'tool-call',
                toolCallId: `call-${calls}`,
                toolName: step.toolName,
                input: JSON.stringify(step.input),
              },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: USAGE },
            ],
          }),
        };
      }
      return textAnswer(text);
    },
  });
  return { model, prompts };
}
