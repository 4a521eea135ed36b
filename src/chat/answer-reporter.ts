import type { AnswerSignal } from './answer-signal.js';
import type { InterruptionReason } from './interrupted-message.js';

/** Where one answer's failures and its interruption are reported. */
export interface AnswerReporter {
  /** Reports an unexpected error once; nothing once the answer was interrupted. */
  failed(error: unknown): void;
  /** Reports the interruption once, if there was one. */
  interrupted(reason: InterruptionReason | undefined): void;
}

/**
 * Reports what goes wrong in one answer: each unexpected error once (the AI SDK may hand the same
 * error to more than one callback), and an interruption as itself, once — whatever it breaks on
 * the way (the provider's fetch, a tool call) is its consequence, not a failure.
 */
export function createAnswerReporter(
  answer: AnswerSignal,
  sinks: { onError?: (error: unknown) => void; onInterrupted?: (reason: InterruptionReason) => void },
): AnswerReporter {
  const reported = new WeakSet<object>();
  let interruptionReported = false;
  return {
    failed(error) {
      if (answer.interruption) return;
      if (typeof error === 'object' && error !== null) {
        if (reported.has(error)) return;
        reported.add(error);
      }
      sinks.onError?.(error);
    },
    interrupted(reason) {
      if (!reason || interruptionReported) return;
      interruptionReported = true;
      sinks.onInterrupted?.(reason);
    },
  };
}
