import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { fromLanguageModelV4, isLanguageModelV4, type LanguageModelV4 } from './language-model-v4.js';

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A v4 model that records the options it was called with and answers `parts` / `content`. */
function v4Model(answer: { parts?: unknown[]; content?: unknown[]; warnings?: unknown[] }) {
  const calls: unknown[] = [];
  const model: LanguageModelV4 = {
    specificationVersion: 'v4',
    provider: 'acme.chat',
    modelId: 'acme-1',
    supportedUrls: { 'image/*': [/^https:/] },
    async doGenerate(options) {
      calls.push(options);
      return {
        content: answer.content ?? [],
        finishReason: { unified: 'interrupted', raw: 'cancelled' },
        usage: USAGE,
        warnings: answer.warnings ?? [],
      };
    },
    async doStream(options) {
      calls.push(options);
      const parts = answer.parts ?? [];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  };
  return { model, calls };
}

const PNG = new Uint8Array([137, 80, 78, 71]);
const OPTIONS: LanguageModelV3CallOptions = {
  prompt: [
    { role: 'system', content: 'Be brief.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'file', mediaType: 'image/png', data: PNG },
        { type: 'file', mediaType: 'image/png', data: new URL('https://img.example/a.png') },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'render',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'rendered' },
              { type: 'file-data', data: 'iVBO', mediaType: 'image/png', filename: 'a.png' },
              { type: 'image-url', url: 'https://img.example/b.png' },
              { type: 'file-id', fileId: 'file-9' },
            ],
          },
        },
      ],
    },
  ],
};

async function collect(stream: ReadableStream<LanguageModelV3StreamPart>) {
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const part of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) parts.push(part);
  return parts;
}

describe('fromLanguageModelV4', () => {
  it('recognises only v4 models', () => {
    expect(isLanguageModelV4(v4Model({}).model)).toBe(true);
    expect(isLanguageModelV4({ specificationVersion: 'v3' })).toBe(false);
    expect(isLanguageModelV4('openai:gpt')).toBe(false);
    expect(isLanguageModelV4(null)).toBe(false);
  });

  it('presents a v3 model and sends the prompt down in v4 shapes', async () => {
    const { model, calls } = v4Model({ parts: [] });
    const adapted = fromLanguageModelV4(model);
    expect(adapted).toMatchObject({ specificationVersion: 'v3', provider: 'acme.chat', modelId: 'acme-1' });
    expect(adapted.supportedUrls).toEqual({ 'image/*': [/^https:/] });
    await adapted.doStream(OPTIONS);
    const sent = calls[0] as { prompt: Array<{ role: string; content: unknown }> };
    expect(sent.prompt[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(sent.prompt[1]?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG } },
      { type: 'file', mediaType: 'image/png', data: { type: 'url', url: new URL('https://img.example/a.png') } },
    ]);
    const toolMessage = sent.prompt[2] as { content: Array<{ output: { value: unknown[] } }> };
    const result = toolMessage.content[0]?.output.value;
    expect(result).toEqual([
      { type: 'text', text: 'rendered' },
      { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBO' }, filename: 'a.png' },
      { type: 'file', mediaType: 'image/*', data: { type: 'url', url: new URL('https://img.example/b.png') } },
      {
        type: 'file',
        mediaType: 'application/octet-stream',
        data: { type: 'reference', reference: { acme: 'file-9' } },
      },
    ]);
  });

  it("reads the stream in v3's shapes, leaving out what v3 has no place for", async () => {
    const { model } = v4Model({
      parts: [
        { type: 'stream-start', warnings: [{ type: 'deprecated', setting: 'topK', message: 'use topP' }] },
        { type: 'ping' },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'Hi' },
        { type: 'text-end', id: 't' },
        { type: 'custom', kind: 'acme.trace' },
        { type: 'reasoning-file', mediaType: 'image/png', data: { type: 'data', data: PNG } },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG } },
        { type: 'file', mediaType: 'image/png', data: { type: 'url', url: new URL('https://img.example/c.png') } },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: '{}' },
        { type: 'finish', finishReason: { unified: 'interrupted', raw: 'cancelled' }, usage: USAGE },
      ],
    });
    const { stream } = await fromLanguageModelV4(model).doStream({ prompt: [] });
    expect(await collect(stream)).toEqual([
      { type: 'stream-start', warnings: [{ type: 'other', message: 'topK: use topP' }] },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Hi' },
      { type: 'text-end', id: 't' },
      { type: 'file', mediaType: 'image/png', data: PNG },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: '{}' },
      { type: 'finish', finishReason: { unified: 'other', raw: 'cancelled' }, usage: USAGE },
    ]);
  });

  it('reads a generated answer the same way, saying what it left out', async () => {
    const { model } = v4Model({
      content: [
        { type: 'text', text: 'Hi', citations: [] },
        { type: 'custom', kind: 'acme.trace' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: 'iVBO' } },
      ],
    });
    const result = await fromLanguageModelV4(model).doGenerate({ prompt: [] });
    expect(result.content).toEqual([
      { type: 'text', text: 'Hi', citations: [] },
      { type: 'file', mediaType: 'image/png', data: 'iVBO' },
    ]);
    expect(result.finishReason).toEqual({ unified: 'other', raw: 'cancelled' });
    expect(result.warnings).toEqual([
      { type: 'other', message: 'a custom part has no place in this answer and was left out' },
    ]);
  });
});
