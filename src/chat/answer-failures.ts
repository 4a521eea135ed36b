import type { InterruptionReason } from './interrupted-message.js';

/** What the client reads when an answer fails; the cause itself goes to `onError` only. */
export const ANSWER_FAILED = 'The assistant could not answer. Please try again.';
const ANSWER_STOPPED = 'The answer was stopped.';
const ANSWER_TIMED_OUT = 'The answer took too long and was stopped.';
/** The AI SDK's own masked text for a failed model stream. */
const SDK_MASKED = 'An error occurred.';

const MASKED_TEXTS = new Set([ANSWER_FAILED, ANSWER_STOPPED, ANSWER_TIMED_OUT, SDK_MASKED]);

/** The masked text of an answer that failed, or was cut short for `interruption`. */
export function failureText(interruption: InterruptionReason | undefined): string {
  if (interruption === 'timeout') return ANSWER_TIMED_OUT;
  return interruption ? ANSWER_STOPPED : ANSWER_FAILED;
}

/**
 * Whether `error` is only the echo of an error chunk already sent: the AI SDK hands every `error`
 * chunk back to the UI stream's `onError` as `new Error(errorText)`, and that text is always one
 * of the masked ones. Reporting it would log a second, empty line for one failure.
 */
export function isErrorChunkEcho(error: unknown): boolean {
  return error instanceof Error && Object.getPrototypeOf(error) === Error.prototype && MASKED_TEXTS.has(error.message);
}
