import { type Dispatcher, request } from 'undici';
import { answerDeltas, type TurnSpec, turnMessage } from './load-script.js';
import { RESUMABLE_HEADERS } from './support.js';

/** How one chat turn over `POST /v1/chat` went, as its client saw it. */
export interface ChatTurnResult {
  /** Answered 200, ended with `finish`, no `error` chunk, and the whole scripted text arrived in order. */
  ok: boolean;
  /** Why not, when not. */
  problem?: string;
  /** From sending the request to the first `text-delta` chunk (ms); NaN when none came. */
  firstDeltaMs: number;
  totalMs: number;
  textDeltas: number;
  /** `file` chunks (published artifacts) in the stream. */
  files: number;
}

/**
 * Sends one user message (asking the scripted model for `spec`) and reads the UI message stream
 * as a client does, event by event, timing the first `text-delta`.
 */
export async function runChatTurn(options: {
  base: string;
  key: string;
  user: string;
  chatId: string;
  spec: TurnSpec;
  dispatcher: Dispatcher;
}): Promise<ChatTurnResult> {
  const { spec } = options;
  const started = performance.now();
  let firstDeltaMs = Number.NaN;
  let textDeltas = 0;
  let files = 0;
  let text = '';
  let finished = false;
  let problem: string | undefined;
  try {
    const response = await request(`${options.base}/v1/chat`, {
      method: 'POST',
      dispatcher: options.dispatcher,
      headers: {
        authorization: `Bearer ${options.key}`,
        'x-chat-user': options.user,
        'content-type': 'application/json',
        ...RESUMABLE_HEADERS,
      },
      body: JSON.stringify({
        id: options.chatId,
        trigger: 'submit-message',
        messages: [{ id: `m-${options.chatId}`, role: 'user', parts: [{ type: 'text', text: turnMessage(spec) }] }],
      }),
    });
    if (response.statusCode !== 200) {
      problem = `status ${response.statusCode}: ${(await response.body.text()).slice(0, 200)}`;
    } else {
      let buffered = '';
      response.body.setEncoding('utf8');
      for await (const piece of response.body as AsyncIterable<string>) {
        buffered += piece;
        let end = buffered.indexOf('\n\n');
        while (end !== -1) {
          const event = buffered.slice(0, end).trim();
          buffered = buffered.slice(end + 2);
          end = buffered.indexOf('\n\n');
          if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
          const chunk = JSON.parse(event.slice('data: '.length)) as {
            type: string;
            delta?: string;
            errorText?: string;
          };
          if (chunk.type === 'text-delta') {
            if (textDeltas === 0) firstDeltaMs = performance.now() - started;
            textDeltas += 1;
            text += chunk.delta ?? '';
          } else if (chunk.type === 'file') files += 1;
          else if (chunk.type === 'error') problem ??= `error chunk: ${chunk.errorText}`;
          else if (chunk.type === 'finish') finished = true;
        }
      }
      if (!finished) problem ??= 'stream ended without finish';
      const expected = answerDeltas(spec.deltas).join('');
      if (text !== expected) problem ??= `text differs (${text.length} of ${expected.length} characters)`;
      if (spec.kind === 'publish' && files !== 1) problem ??= `expected one file chunk, saw ${files}`;
    }
  } catch (error) {
    problem = `request failed: ${error instanceof Error ? error.message : String(error)}`;
  }
  const result: ChatTurnResult = {
    ok: problem === undefined,
    firstDeltaMs,
    totalMs: performance.now() - started,
    textDeltas,
    files,
  };
  if (problem !== undefined) result.problem = problem;
  return result;
}
