import { type FinishReason, isToolUIPart, type UIMessage, type UIMessageStreamOnFinishCallback } from 'ai';

/**
 * Why an answer ended early: the client ended its request or asked `POST …/:chatId/stop` (`stop`:
 * useChat's `stop()` aborts the fetch, and a page closed mid-answer looks the same over HTTP),
 * the response lost its reader while the request stayed open, or a resumable answer found no
 * reader within its grace (`disconnect`), the handler's deadline passed (`timeout`), or the
 * process running it died or shut down before it ended (`failed`).
 */
export type InterruptionReason = 'stop' | 'disconnect' | 'timeout' | 'failed';

/** What Mordn keeps in a message's `metadata.mordn`. */
export interface MordnMessageMetadata {
  /** Present on an answer that ended early; its parts were closed where they stood. */
  interrupted?: { reason: InterruptionReason };
}

/** The `errorText` of a tool call that had not finished when its answer ended. */
export const INTERRUPTED_TOOL_ERROR = 'The tool call was interrupted before it finished.';

type Part = UIMessage['parts'][number];

/**
 * Closes what an interrupted answer left open, so the stored message is a finished one: text and
 * reasoning still `streaming` become `done`, and a tool call still waiting for its input or its
 * result — one showing a preliminary result (live output) included — becomes an `output-error`
 * saying it was interrupted (its result, if any, never reached the model; the preliminary one is
 * not kept). Approval states are left alone: they wait for the user, not for the stream.
 */
export function closeInterruptedParts(message: UIMessage): UIMessage {
  return { ...message, parts: message.parts.map(closePart) };
}

function closePart(part: Part): Part {
  if ((part.type === 'text' || part.type === 'reasoning') && part.state === 'streaming') {
    return { ...part, state: 'done' };
  }
  if (isToolUIPart(part) && (part.state === 'input-streaming' || part.state === 'input-available')) {
    return { ...part, state: 'output-error', errorText: INTERRUPTED_TOOL_ERROR } as Part;
  }
  if (isToolUIPart(part) && part.state === 'output-available' && part.preliminary === true) {
    const { output: _preliminary, preliminary: _flag, ...call } = part;
    return { ...call, state: 'output-error', errorText: INTERRUPTED_TOOL_ERROR } as Part;
  }
  return part;
}

/**
 * The answer as it is persisted after an interruption: its open parts closed and
 * `metadata.mordn.interrupted = { reason }` set (other metadata kept).
 *
 * @example
 * const stored = markInterrupted(responseMessage, 'timeout');
 * stored.metadata; // { mordn: { interrupted: { reason: 'timeout' } } }
 */
export function markInterrupted(message: UIMessage, reason: InterruptionReason): UIMessage {
  const metadata = isRecord(message.metadata) ? message.metadata : {};
  const mordn = isRecord(metadata.mordn) ? metadata.mordn : {};
  const interrupted: MordnMessageMetadata = { interrupted: { reason } };
  return { ...closeInterruptedParts(message), metadata: { ...metadata, mordn: { ...mordn, ...interrupted } } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the UI stream's `onFinish` knows about how the answer ended. */
type FinishEvent = Pick<
  Parameters<UIMessageStreamOnFinishCallback<UIMessage>>[0],
  'messages' | 'responseMessage' | 'isAborted' | 'outcome'
> & { finishReason?: FinishReason | undefined };

/**
 * The conversation to store once an answer's stream is over, and the interruption to report. An
 * answer the model finished is complete, even if its client left just after; one that never got
 * its finish (cut short, or failed) has its open parts closed, and is marked with `interruption`
 * when that was the cause.
 */
export function settleAnswer(
  event: FinishEvent,
  interruption: InterruptionReason | undefined,
): { messages: UIMessage[]; interrupted: InterruptionReason | undefined } {
  const { finishReason } = event;
  const unfinished = event.isAborted || event.outcome.status === 'failed' || !finishReason || finishReason === 'error';
  if (!unfinished) return { messages: event.messages, interrupted: undefined };
  const messages = event.messages.map((message) => {
    if (message.id !== event.responseMessage.id) return message;
    return interruption ? markInterrupted(message, interruption) : closeInterruptedParts(message);
  });
  return { messages, interrupted: interruption };
}
