import type { LanguageModelUsage } from 'ai';
import type { UsageDelta } from './usage-types.js';

/** Whether the provider reported any token count for a step. */
export function reportsUsage(usage: LanguageModelUsage | undefined): boolean {
  return usage !== undefined && (Number.isFinite(usage.inputTokens) || Number.isFinite(usage.outputTokens));
}

const count = (value: number | undefined) => (value !== undefined && Number.isFinite(value) && value > 0 ? value : 0);

/**
 * A model step's tokens as the AI SDK reports them: input (cached reads and cache writes are part
 * of it, and also kept apart as `cachedInputTokens`) and output (reasoning is part of it, and also
 * kept apart as `reasoningTokens`). A step without usage adds no tokens.
 *
 * @example
 * usage.add(owner, { ...stepTokens(step.usage), turns: first ? 1 : 0 });
 */
export function stepTokens(usage: LanguageModelUsage | undefined): UsageDelta {
  if (!usage || !reportsUsage(usage)) return {};
  const cacheRead = usage.inputTokenDetails?.cacheReadTokens ?? usage.cachedInputTokens;
  return {
    inputTokens: count(usage.inputTokens),
    outputTokens: count(usage.outputTokens),
    reasoningTokens: count(usage.outputTokenDetails?.reasoningTokens ?? usage.reasoningTokens),
    cachedInputTokens: count(cacheRead) + count(usage.inputTokenDetails?.cacheWriteTokens),
  };
}
