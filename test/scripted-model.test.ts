import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, stepCountIs, streamText, type TextStreamPart, type ToolSet, tool } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLanguageModel } from '../src/chat/model.js';
import {
  type ModelScript,
  type ScriptedModelServer,
  startScriptedModelServer,
} from './support/scripted-model-server.js';

const open: ScriptedModelServer[] = [];

async function serve(script: ModelScript): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer(script);
  open.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

const scriptedModel = (server: ScriptedModelServer) =>
  createOpenAICompatible({ name: 'scripted', baseURL: server.baseUrl, includeUsage: true })('scripted-1');

function createAddTool(calls: Array<{ a: number; b: number }>) {
  return tool({
    description: 'Adds two numbers.',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: async ({ a, b }) => {
      calls.push({ a, b });
      return { sum: a + b };
    },
  });
}

async function collect<TOOLS extends ToolSet>(
  stream: AsyncIterable<TextStreamPart<TOOLS>>,
): Promise<Array<TextStreamPart<TOOLS>>> {
  const parts: Array<TextStreamPart<TOOLS>> = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const ADD_SCRIPT = [
  { toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] },
  { text: ['The sum ', 'is 5.'] },
] satisfies ModelScript;

describe('scripted model server with the AI SDK', () => {
  it('streams a tool call, receives its result and streams the final text', async () => {
    const server = await serve(ADD_SCRIPT);
    const calls: Array<{ a: number; b: number }> = [];
    const result = streamText({
      model: scriptedModel(server),
      prompt: 'What is 2 + 3?',
      tools: { add: createAddTool(calls) },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const parts = await collect(result.fullStream);

    expect(parts.find((part) => part.type === 'tool-call')).toMatchObject({
      toolCallId: 'call_0_0',
      toolName: 'add',
      input: { a: 2, b: 3 },
    });
    const argumentDeltas = parts.flatMap((part) => (part.type === 'tool-input-delta' ? [part.delta] : []));
    expect(argumentDeltas.length).toBeGreaterThan(1);
    expect(argumentDeltas.join('')).toBe('{"a":2,"b":3}');
    expect(calls).toEqual([{ a: 2, b: 3 }]);
    expect(parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : []))).toEqual(['The sum ', 'is 5.']);
    expect(await result.text).toBe('The sum is 5.');
    expect((await result.steps).map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect((await result.totalUsage).inputTokens).toBeGreaterThan(0);

    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(first).toMatchObject({
      model: 'scripted-1',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'What is 2 + 3?' }],
      tools: [{ type: 'function', function: { name: 'add', description: 'Adds two numbers.' } }],
    });
    expect(second?.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_0_0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', tool_call_id: 'call_0_0', content: '{"sum":5}' },
    ]);
  });

  it('keeps parallel tool calls apart by their index', async () => {
    const server = await serve([
      {
        toolCalls: [
          { name: 'add', arguments: { a: 2, b: 3 } },
          { name: 'add', arguments: { a: 10, b: 20 }, id: 'call_second' },
        ],
      },
      { text: '5 and 30.' },
    ]);
    const calls: Array<{ a: number; b: number }> = [];
    const result = streamText({
      model: scriptedModel(server),
      prompt: 'What are 2 + 3 and 10 + 20?',
      tools: { add: createAddTool(calls) },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(await result.text).toBe('5 and 30.');
    expect(calls).toEqual([
      { a: 2, b: 3 },
      { a: 10, b: 20 },
    ]);
    expect(server.requests[1]?.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_0_0', content: '{"sum":5}' },
      { role: 'tool', tool_call_id: 'call_second', content: '{"sum":30}' },
    ]);
  });

  it('speaks the OpenAI streaming wire format', async () => {
    const server = await serve([{ text: 'Adding.', toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }]);
    const response = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'wire-1',
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const body = (await response.text()).replace(/"created":\d+/g, '"created":0');
    expect(body).toMatchInlineSnapshot(`
      "data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"Adding."},"logprobs":null,"finish_reason":null}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0_0","type":"function","function":{"name":"add","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":2,\\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"b\\":3}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

      data: {"id":"chatcmpl-scripted-0","object":"chat.completion.chunk","created":0,"model":"wire-1","system_fingerprint":null,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

      data: [DONE]

      "
    `);
  });

  it('answers non-streaming requests with one completion, tool calls included', async () => {
    const server = await serve(ADD_SCRIPT);
    const calls: Array<{ a: number; b: number }> = [];
    const result = await generateText({
      model: scriptedModel(server),
      prompt: 'What is 2 + 3?',
      tools: { add: createAddTool(calls) },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe('The sum is 5.');
    expect(calls).toEqual([{ a: 2, b: 3 }]);
    expect(server.requests.map((request) => request.stream)).toEqual([undefined, undefined]);
    expect(server.requests[1]?.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_0_0',
      content: '{"sum":5}',
    });
  });

  it('ends a hanging stream with an abort when the signal fires, and the server sees the disconnect', async () => {
    const server = await serve([{ hang: true }]);
    const started = Date.now();
    let abortCallbacks = 0;
    const result = streamText({
      model: scriptedModel(server),
      prompt: 'Hello?',
      abortSignal: AbortSignal.timeout(200),
      maxRetries: 0,
      onAbort: () => {
        abortCallbacks += 1;
      },
    });
    const parts = await collect(result.fullStream);

    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(parts.map((part) => part.type)).toContain('abort');
    expect(parts.some((part) => part.type === 'text-delta')).toBe(false);
    expect(abortCallbacks).toBe(1);
    await server.waitForDisconnect(0);
  });

  it('surfaces an HTTP 500 as an API call error in the stream', async () => {
    const server = await serve([
      { status: 500, body: { error: { message: 'upstream overloaded', type: 'server_error' } } },
    ]);
    const errors: unknown[] = [];
    const result = streamText({
      model: scriptedModel(server),
      prompt: 'Hello?',
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    const parts = await collect(result.fullStream);

    const error = parts.find((part) => part.type === 'error')?.error;
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 500, message: 'upstream overloaded', isRetryable: true });
    expect(errors).toEqual([error]);
    await expect(result.text).rejects.toThrow();
    expect(server.requests).toHaveLength(1);
  });

  it('lets a script function answer from the request, and refuses requests beyond the script', async () => {
    const server = await serve((request, turnIndex) => ({
      text: `turn ${turnIndex}: ${String(request.messages.at(-1)?.content)}`,
    }));
    const model = scriptedModel(server);
    expect((await generateText({ model, prompt: 'ping', maxRetries: 0 })).text).toBe('turn 0: ping');
    expect((await generateText({ model, prompt: 'pong', maxRetries: 0 })).text).toBe('turn 1: pong');

    const exhausted = await serve([]);
    await expect(generateText({ model: scriptedModel(exhausted), prompt: 'Hello?' })).rejects.toThrow(
      /no turn scripted for request 0/,
    );
    expect(exhausted.requests).toHaveLength(1);
  });

  it('waits delayMs before answering', async () => {
    const server = await serve([{ delayMs: 150, text: 'late' }]);
    const started = Date.now();
    const result = streamText({ model: scriptedModel(server), prompt: 'Hello?', maxRetries: 0 });
    expect((await server.waitForRequest(0)).messages).toEqual([{ role: 'user', content: 'Hello?' }]);
    expect(await result.text).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });
});

describe('createLanguageModel against an OpenAI-compatible server', () => {
  it('sends the configured model id, or the agent’s, and asks for usage', async () => {
    const server = await serve([
      { text: ['Hi', ' there'], usage: { promptTokens: 11, completionTokens: 2 } },
      { text: 'Agent model here' },
    ]);
    const model = { provider: 'openai-compatible', modelId: 'scripted-1', baseUrl: server.baseUrl } as const;
    let fetches = 0;
    const countingFetch: typeof fetch = (input, init) => {
      fetches += 1;
      return fetch(input, init);
    };

    const result = streamText({ model: createLanguageModel(model, { fetch: countingFetch }), prompt: 'Hello' });
    expect(await result.text).toBe('Hi there');
    expect(await result.totalUsage).toMatchObject({ inputTokens: 11, outputTokens: 2, totalTokens: 13 });
    expect(server.requests[0]).toMatchObject({
      model: 'scripted-1',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(fetches).toBe(1);

    const agentModel = createLanguageModel(model, { modelId: 'agent-model' });
    expect((await generateText({ model: agentModel, prompt: 'Hello' })).text).toBe('Agent model here');
    expect(server.requests[1]?.model).toBe('agent-model');
  });
});
