import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import { ConfigError, type ModelConfig } from '../config.js';

/** A provider's model object, never a bare id string, so callers can log its provider and id. */
export type ProviderLanguageModel = Exclude<LanguageModel, string>;

export interface CreateLanguageModelOptions {
  /** An agent's own model id for the operator's provider; replaces the operator's default id. */
  modelId?: string;
  /** Used for every provider request instead of the global `fetch` (tests count requests with it). */
  fetch?: typeof fetch;
}

/**
 * Builds the language model the operator configured with `MORDN_MODEL`. The operator alone picks
 * provider, credentials and base URL; an agent may only name another model id of that provider.
 *
 * Nothing here reads `process.env`: credentials come from the parsed configuration. When none is
 * configured, `openai` and `anthropic` fall back to the provider's own `OPENAI_API_KEY` /
 * `ANTHROPIC_API_KEY`, which the provider reads when a request is made. `openai:<id>` uses the
 * provider's default model factory (the Responses API); `openai-compatible:<id>` uses Chat
 * Completions and asks for usage in streams, as Ollama, vLLM, LM Studio and OpenRouter report it.
 *
 * @example
 * const model = createLanguageModel(config.model, { modelId: agentConfig.model });
 * const result = streamText({ model, messages });
 */
export function createLanguageModel(
  model: ModelConfig,
  options: CreateLanguageModelOptions = {},
): ProviderLanguageModel {
  const modelId = options.modelId ?? model.modelId;
  const settings = { apiKey: model.apiKey, baseURL: model.baseUrl, fetch: options.fetch };
  switch (model.provider) {
    case 'openai':
      return createOpenAI(settings)(modelId);
    case 'anthropic':
      return createAnthropic(settings)(modelId);
    case 'openai-compatible': {
      if (model.baseUrl === undefined) {
        // The configuration refuses this already; a hand-built ModelConfig may not.
        throw new ConfigError([
          { variable: 'MORDN_MODEL_BASE_URL', message: 'is required for an openai-compatible model' },
        ]);
      }
      const provider = createOpenAICompatible({
        ...settings,
        name: 'openai-compatible',
        baseURL: model.baseUrl,
        includeUsage: true,
      });
      return provider(modelId);
    }
  }
}
