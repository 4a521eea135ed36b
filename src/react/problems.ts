import { unsupportedTypeMessage } from './format.js';
import { type LimitWording, limitReachedMessage, storageFullMessage } from './limits.js';

/** The parts of a problem+json body the UI uses; Mordn's `detail` is written to be shown. */
export interface Problem {
  code?: string;
  detail?: string;
  /** With `LIMIT_REACHED`: which limit (`tokensPerDay`, `tokensPerMonth`, `sandboxCpuSecondsPerDay`, `storageBytes`). */
  limit?: string;
  /** With `LIMIT_REACHED`: when the limit resets (ISO 8601), null for storage. */
  resetAt?: string | null;
}

/** A problem+json body (or an error message carrying one) read leniently; undefined when it is not one. */
export function parseProblem(text: string): Problem | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { code, detail, limit, resetAt } = value as Record<string, unknown>;
    return {
      ...(typeof code === 'string' ? { code } : {}),
      ...(typeof detail === 'string' ? { detail } : {}),
      ...(typeof limit === 'string' ? { limit } : {}),
      ...(typeof resetAt === 'string' || resetAt === null ? { resetAt } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * What to say about a refused upload. A refused type is reworded from the picker's hint (the
 * server's own sentence lists raw MIME types); other refusals keep Mordn's `detail`, which names
 * the limit.
 */
export function uploadProblemMessage(
  filename: string,
  status: number,
  problem: Problem | undefined,
  accept: readonly string[],
): string {
  if (problem?.code === 'UNSUPPORTED_MEDIA_TYPE' || status === 415) return unsupportedTypeMessage(filename, accept);
  if (problem?.code === 'UPLOADS_DISABLED') return 'This chat does not accept attachments.';
  if (problem?.code === 'LIMIT_REACHED') {
    return problem.limit === 'storageBytes' || status === 413
      ? storageFullMessage(filename)
      : `${filename} could not be attached. ${limitReachedMessage(problem)}`;
  }
  return `${filename}: ${problem?.detail ?? `the upload failed (${status}).`}`;
}

/** A chat request's failure as the UI shows it. */
export interface ChatProblem {
  /**
   * `sandbox-unavailable`: Mordn's 503 MANAGED_SANDBOX_UNAVAILABLE (publish first, or try later);
   * `limit-reached`: its 429 (or 413) LIMIT_REACHED, the message naming the limit and its reset.
   */
  kind: 'sandbox-unavailable' | 'limit-reached' | 'error';
  message: string;
}

/**
 * The error `useChat` reports, made readable. Its transport puts the failed response's body in
 * `message`, so a Mordn problem is read from there; anything else gets a generic sentence rather
 * than a stack or a JSON dump. A reached limit is named with its reset time in `wording`'s zone
 * (the reader's by default).
 */
export function chatProblemOf(error: Error, wording?: LimitWording): ChatProblem {
  const problem = parseProblem(error.message);
  if (problem?.code === 'LIMIT_REACHED')
    return { kind: 'limit-reached', message: limitReachedMessage(problem, wording) };
  if (problem?.code === 'MANAGED_SANDBOX_UNAVAILABLE') {
    return {
      kind: 'sandbox-unavailable',
      message: problem.detail ?? 'Managed sandboxes are not available for this agent right now.',
    };
  }
  if (problem?.detail) return { kind: 'error', message: problem.detail };
  if (error.message === 'Failed to fetch' || error.name === 'TypeError') {
    return { kind: 'error', message: 'The answer could not be loaded; check your connection and try again.' };
  }
  return { kind: 'error', message: 'Something went wrong while answering. Please try again.' };
}
