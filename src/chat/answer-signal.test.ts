import { createUIMessageStreamResponse, type UIMessageChunk } from 'ai';
import { describe, expect, it, vi } from 'vitest';
import { answerResponse } from './answer-signal.js';

const CHUNKS: UIMessageChunk[] = [
  { type: 'start', messageId: 'm1' },
  { type: 'start-step' },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'héllo "wörld"\n' },
  { type: 'text-delta', id: 't', delta: ' 🙂' },
  { type: 'text-end', id: 't' },
  { type: 'finish-step' },
  { type: 'finish', finishReason: 'stop' },
];

function chunkStream(chunks: readonly UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

describe('answerResponse', () => {
  it("sends exactly the bytes and headers of the SDK's own UI message stream response", async () => {
    const ours = answerResponse(chunkStream(CHUNKS), { headers: { 'X-Extra': '1' }, onAbandoned: () => undefined });
    const sdk = createUIMessageStreamResponse({ stream: chunkStream(CHUNKS) });
    expect(new Uint8Array(await ours.arrayBuffer())).toEqual(new Uint8Array(await sdk.arrayBuffer()));
    for (const [name, value] of sdk.headers) expect(ours.headers.get(name)).toBe(value);
    expect(ours.headers.get('X-Extra')).toBe('1');
  });

  it('reads the answer to its end when its reader leaves, and says so once', async () => {
    const onAbandoned = vi.fn();
    let pulled = 0;
    const source = new ReadableStream<UIMessageChunk>({
      pull(controller) {
        pulled += 1;
        if (pulled > CHUNKS.length) controller.close();
        else controller.enqueue(CHUNKS[pulled - 1] as UIMessageChunk);
      },
    });
    const reader = (answerResponse(source, { headers: {}, onAbandoned }).body as ReadableStream).getReader();
    await reader.read();
    await reader.cancel();
    await vi.waitFor(() => expect(pulled).toBe(CHUNKS.length + 1));
    expect(onAbandoned).toHaveBeenCalledTimes(1);
  });
});
