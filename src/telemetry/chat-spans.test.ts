import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { jsonSchema, stepCountIs, streamText, type ToolSet, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTurnTrace } from './chat-spans.js';

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** A model that calls each of `tools` once (with `{ secret: 'argument-canary' }`), then answers. */
function scriptedModel(tools: string[]): MockLanguageModelV3 {
  let calls = 0;
  return new MockLanguageModelV3({
    modelId: 'mock-1',
    doStream: async () => {
      calls += 1;
      const parts: LanguageModelV3StreamPart[] =
        calls === 1
          ? [
              ...tools.map(
                (name, index): LanguageModelV3StreamPart => ({
                  type: 'tool-call',
                  toolCallId: `call-${index}`,
                  toolName: name,
                  input: JSON.stringify({ secret: 'argument-canary' }),
                }),
              ),
              { type: 'finish', usage: usage(12, 5), finishReason: { unified: 'tool-calls', raw: undefined } },
            ]
          : [
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'done' },
              { type: 'text-end', id: 't' },
              { type: 'finish', usage: usage(30, 2), finishReason: { unified: 'stop', raw: undefined } },
            ];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  });
}

const inputSchema = jsonSchema<{ secret: string }>({ type: 'object', properties: { secret: { type: 'string' } } });

function testTools(): ToolSet {
  return {
    refused: tool({
      inputSchema,
      execute: async () => ({ isError: true, content: [{ type: 'text', text: 'result-canary' }] }),
    }),
    live: tool({
      inputSchema,
      async *execute() {
        yield { preliminary: 'partial' };
        yield { content: [{ type: 'text', text: 'result-canary' }] };
      },
    }),
    broken: tool({
      inputSchema,
      execute: async (): Promise<{ ok: boolean }> => {
        throw new TypeError('tool exploded');
      },
    }),
  };
}

async function runTurn(captureContent: boolean) {
  const turn = startTurnTrace({ attributes: () => ({ 'mordn.tenant.id': 'ten_1' }), captureContent });
  const tools = testTools();
  turn.tools(tools);
  const result = streamText({
    model: turn.model(scriptedModel(Object.keys(tools))),
    prompt: 'prompt-canary',
    tools,
    stopWhen: stepCountIs(3),
  });
  await result.consumeStream();
  turn.end();
}

describe('startTurnTrace without a tracer provider', () => {
  it('leaves the model and the tools as they are', () => {
    const turn = startTurnTrace({ attributes: () => ({ never: 'asked' }) });
    const model = scriptedModel([]);
    const tools = testTools();
    const before = { ...tools };
    expect(turn.model(model)).toBe(model);
    turn.tools(tools);
    expect(tools).toEqual(before);
    turn.end();
  });
});

describe('startTurnTrace under a tracer provider', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => provider.register());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('records the turn, each model call and each tool call under the call that asked for it', async () => {
    exporter.reset();
    await runTurn(false);
    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.filter((span) => span.name === name);
    const [turn] = byName('invoke_agent');
    expect(turn?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'mordn.tenant.id': 'ten_1' });
    const calls = byName('chat mock-1');
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call.parentSpanContext?.spanId).toBe(turn?.spanContext().spanId);
    expect(calls[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'mock-1',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 5,
      'gen_ai.response.finish_reasons': ['tool-calls'],
    });
    const outcome = (name: string) => {
      const [span] = byName(`execute_tool ${name}`);
      expect(span?.parentSpanContext?.spanId, name).toBe(calls[0]?.spanContext().spanId);
      return { outcome: span?.attributes['mordn.tool.outcome'], errorType: span?.attributes['error.type'] };
    };
    expect(outcome('refused')).toEqual({ outcome: 'error', errorType: undefined });
    expect(outcome('live')).toEqual({ outcome: 'ok', errorType: undefined });
    expect(outcome('broken')).toEqual({ outcome: 'error', errorType: 'TypeError' });
    expect(byName('execute_tool live')).toHaveLength(1);
    // No content by default, anywhere.
    const recorded = JSON.stringify(spans.map((span) => [span.name, span.attributes, span.events]));
    for (const canary of ['prompt-canary', 'argument-canary', 'result-canary', 'tool exploded']) {
      expect(recorded).not.toContain(canary);
    }
  });

  it('records prompts, tool arguments and results only when asked to', async () => {
    exporter.reset();
    await runTurn(true);
    const spans = exporter.getFinishedSpans();
    const [call] = spans.filter((span) => span.name === 'chat mock-1');
    expect(String(call?.attributes['gen_ai.input.messages'])).toContain('prompt-canary');
    const [refused] = spans.filter((span) => span.name === 'execute_tool refused');
    expect(refused?.attributes['gen_ai.tool.call.arguments']).toBe('{"secret":"argument-canary"}');
    expect(String(refused?.attributes['gen_ai.tool.call.result'])).toContain('result-canary');
  });
});
