import { MockLanguageModelV3 } from 'ai/test';

/** One part of a model's stream, as a provider yields it. */
export type LanguageModelV3StreamPart =
  Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer Part> ? Part : never;

/** One model call: the parts it streams, and whether it then stops sending until it is aborted. */
export interface StallingStep {
  parts: LanguageModelV3StreamPart[];
  /** Keep the stream open after `parts` (an answer still being written) until the call is aborted. */
  stall?: boolean;
}

export const FINISH_USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** The parts of a step that ends normally with `reason`. */
export function finishPart(reason: 'stop' | 'tool-calls'): LanguageModelV3StreamPart {
  return { type: 'finish', finishReason: { unified: reason, raw: reason }, usage: FINISH_USAGE };
}

/**
 * A language model whose calls stream scripted parts and may then stall mid-answer, as a provider
 * does while it is still generating: the stream ends only when the call's abort signal fires (with
 * the signal's reason, as a provider's fetch would). `prompts` records what each call was sent.
 *
 * @example
 * const { model } = stallingModel([{ parts: [textStart('t'), textDelta('t', 'Half an ans')], stall: true }]);
 */
export function stallingModel(steps: readonly StallingStep[]) {
  const prompts: string[] = [];
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      const step = steps[prompts.length] ?? { parts: [finishPart('stop')] };
      prompts.push(JSON.stringify(options.prompt));
      const signal = options.abortSignal;
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          for (const part of step.parts) controller.enqueue(part);
          if (!step.stall) {
            controller.close();
            return;
          }
          const abort = () => controller.error(signal?.reason ?? new DOMException('Aborted', 'AbortError'));
          if (signal?.aborted) abort();
          else signal?.addEventListener('abort', abort, { once: true });
        },
      });
      return { stream };
    },
  });
  return { model, prompts };
}

export const textStart = (id: string): LanguageModelV3StreamPart => ({ type: 'text-start', id });
export const textDelta = (id: string, delta: string): LanguageModelV3StreamPart => ({ type: 'text-delta', id, delta });
export const textEnd = (id: string): LanguageModelV3StreamPart => ({ type: 'text-end', id });
