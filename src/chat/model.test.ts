import { generateText } from 'ai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, type ModelConfig } from '../config.js';
import { createLanguageModel } from './model.js';

interface CapturedRequest {
  url: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/**
 * A fetch that records each request and refuses it with a non-retryable 400, so a call ends after
 * one request and nothing leaves the process.
 */
function createRefusingFetch(): { fetch: typeof fetch; requests: CapturedRequest[] } {
  const requests: CapturedRequest[] = [];
  const refusingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    requests.push({
      url: request.url,
      headers: request.headers,
      body: (await request.json()) as Record<string, unknown>,
    });
    return Response.json({ error: { message: 'refused by the test', type: 'invalid_request_error' } }, { status: 400 });
  };
  return { fetch: refusingFetch, requests };
}

async function sendOneRequest(model: ModelConfig, options: { modelId?: string } = {}): Promise<CapturedRequest> {
  const { fetch, requests } = createRefusingFetch();
  await expect(
    generateText({ model: createLanguageModel(model, { ...options, fetch }), prompt: 'Hello', maxRetries: 0 }),
  ).rejects.toThrow();
  expect(requests).toHaveLength(1);
  return requests[0] as CapturedRequest;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createLanguageModel', () => {
  it.each([
    { model: { provider: 'openai', modelId: 'gpt-4.1-mini' }, expected: 'openai.responses' },
    { model: { provider: 'anthropic', modelId: 'claude-sonnet-4-5' }, expected: 'anthropic.messages' },
    {
      model: { provider: 'openai-compatible', modelId: 'llama3.2', baseUrl: 'http://127.0.0.1:11434/v1' },
      expected: 'openai-compatible.chat',
    },
  ] satisfies Array<{ model: ModelConfig; expected: string }>)(
    'builds $model.provider as a $expected model',
    ({ model, expected }) => {
      const built = createLanguageModel(model);
      expect(built.provider).toBe(expected);
      expect(built.modelId).toBe(model.modelId);
    },
  );

  it.each([
    { provider: 'openai', modelId: 'gpt-4.1-mini' },
    { provider: 'anthropic', modelId: 'claude-sonnet-4-5' },
    { provider: 'openai-compatible', modelId: 'llama3.2', baseUrl: 'http://127.0.0.1:11434/v1' },
  ] satisfies ModelConfig[])('lets an agent name its own model id for $provider', (model) => {
    const built = createLanguageModel(model, { modelId: 'agent-choice' });
    expect(built.modelId).toBe('agent-choice');
    expect(createLanguageModel(model, {}).modelId).toBe(model.modelId);
  });

  it('sends openai requests to the Responses API with the configured key and base URL', async () => {
    const request = await sendOneRequest(
      { provider: 'openai', modelId: 'gpt-4.1-mini', baseUrl: 'https://gateway.example/v1', apiKey: 'sk-configured' },
      { modelId: 'gpt-agent' },
    );
    expect(request.url).toBe('https://gateway.example/v1/responses');
    expect(request.headers.get('authorization')).toBe('Bearer sk-configured');
    expect(request.body.model).toBe('gpt-agent');
  });

  it('leaves the key to the provider when none is configured', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-provider-environment');
    vi.stubEnv('OPENAI_BASE_URL', undefined);
    const request = await sendOneRequest({ provider: 'openai', modelId: 'gpt-4.1-mini' });
    expect(request.url).toBe('https://api.openai.com/v1/responses');
    expect(request.headers.get('authorization')).toBe('Bearer sk-from-provider-environment');
  });

  it('sends anthropic requests with the configured key', async () => {
    vi.stubEnv('ANTHROPIC_BASE_URL', undefined);
    const request = await sendOneRequest({
      provider: 'anthropic',
      modelId: 'claude-sonnet-4-5',
      apiKey: 'sk-ant-configured',
    });
    expect(request.url).toBe('https://api.anthropic.com/v1/messages');
    expect(request.headers.get('x-api-key')).toBe('sk-ant-configured');
    expect(request.body.model).toBe('claude-sonnet-4-5');
  });

  it('sends openai-compatible requests to Chat Completions at the base URL, with the key when given', async () => {
    const withKey = await sendOneRequest({
      provider: 'openai-compatible',
      modelId: 'llama3.2',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: 'sk-or-configured',
    });
    expect(withKey.url).toBe('http://127.0.0.1:11434/v1/chat/completions');
    expect(withKey.headers.get('authorization')).toBe('Bearer sk-or-configured');
    expect(withKey.body).toMatchObject({ model: 'llama3.2', messages: [{ role: 'user', content: 'Hello' }] });

    const withoutKey = await sendOneRequest({
      provider: 'openai-compatible',
      modelId: 'llama3.2',
      baseUrl: 'http://127.0.0.1:11434/v1',
    });
    expect(withoutKey.headers.get('authorization')).toBeNull();
  });

  it('refuses an openai-compatible model without a base URL, naming the variable', () => {
    expect(() => createLanguageModel({ provider: 'openai-compatible', modelId: 'llama3.2' })).toThrow(ConfigError);
    expect(() => createLanguageModel({ provider: 'openai-compatible', modelId: 'llama3.2' })).toThrow(
      /MORDN_MODEL_BASE_URL/,
    );
  });
});
