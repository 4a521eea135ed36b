import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';

/** The UI message chunks of an SSE response, in order (the `[DONE]` marker dropped). */
export async function readUiChunks(response: Response): Promise<UIMessageChunk[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .map((event) => event.trim())
    .filter((event) => event.startsWith('data: ') && event !== 'data: [DONE]')
    .map((event) => JSON.parse(event.slice('data: '.length)) as UIMessageChunk);
}

/** The chunks of SSE text as read so far (the `[DONE]` marker dropped), as plain JSON values. */
export function sseChunks(sse: string): Array<Record<string, unknown>> {
  return sse
    .split('\n\n')
    .filter((event) => event.startsWith('data: ') && event !== 'data: [DONE]')
    .map((event) => JSON.parse(event.slice('data: '.length)) as Record<string, unknown>);
}

/** Feeds chunks through the AI SDK's own client-side parser; throws on anything it rejects. */
export async function assembleWithSdk(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  let failure: unknown;
  for await (const message of readUIMessageStream({
    stream,
    terminateOnError: true,
    onError: (error) => {
      failure = error;
    },
  })) {
    last = message;
  }
  if (failure) throw failure;
  return last;
}

/** useChat's default request body for sending `text` (and files) in chat `chatId`. */
export function chatBody(
  chatId: string,
  text: string,
  files: Array<{ storagePath: string; filename: string; mediaType: string }> = [],
  history: unknown[] = [],
) {
  return {
    id: chatId,
    trigger: 'submit-message',
    messages: [
      ...history,
      {
        id: `user-${Math.random().toString(36).slice(2)}`,
        role: 'user',
        parts: [
          ...files.map((file) => ({
            type: 'file',
            mediaType: file.mediaType,
            filename: file.filename,
            url: 'https://client-sent.example/should-not-be-used',
            storagePath: file.storagePath,
          })),
          { type: 'text', text },
        ],
      },
    ],
  };
}
