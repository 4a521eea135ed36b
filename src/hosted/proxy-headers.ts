import { ServiceError } from '../errors.js';

/**
 * How `createMordnHandler` hands its own options to the API, one request header each. Both only
 * ever narrow what the API would do anyway; neither conveys any authorization.
 */

/**
 * `sandboxes: false`: no managed sandboxes for this request — no sandbox tools in the chat, and
 * uploads and bootstrap hints stay on the default policy.
 */
export const SANDBOXES_OFF_HEADER = 'X-Mordn-Sandboxes';

/** Whether a request turned managed sandboxes off with `X-Mordn-Sandboxes: off` (any case). */
export function sandboxesTurnedOff(value: string | undefined): boolean {
  return value?.toLowerCase() === 'off';
}

/**
 * `streamTimeoutMs`: the deadline of the chat run in milliseconds. The API ends the answer at
 * that deadline itself (saving what was said), so the run never outlives the proxy that streams
 * it, nor is it cut short by a proxy whose deadline is longer than the API's default.
 */
export const STREAM_TIMEOUT_HEADER = 'X-Mordn-Stream-Timeout-Ms';

/** The shortest deadline a chat run may be given (1 s). */
export const MIN_STREAM_TIMEOUT_MS = 1_000;

/** The longest deadline a chat run may be given (30 minutes). */
export const MAX_STREAM_TIMEOUT_MS = 30 * 60 * 1000;

/** The deadline of a chat run when nobody asks for another (5 minutes). */
export const DEFAULT_STREAM_TIMEOUT_MS = 5 * 60 * 1000;

/**
 * The deadline a request asks for in `X-Mordn-Stream-Timeout-Ms`, or `fallback` without the header.
 * A value that is not a whole number of milliseconds from 1 s to 30 minutes is a 400
 * `VALIDATION_FAILED` naming the header and its range.
 *
 * @example
 * const streamTimeoutMs = requestedStreamTimeout(c.req.header(STREAM_TIMEOUT_HEADER), DEFAULT_STREAM_TIMEOUT_MS);
 */
export function requestedStreamTimeout(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const milliseconds = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!(milliseconds >= MIN_STREAM_TIMEOUT_MS && milliseconds <= MAX_STREAM_TIMEOUT_MS)) {
    const message = `must be a whole number of milliseconds from ${MIN_STREAM_TIMEOUT_MS} to ${MAX_STREAM_TIMEOUT_MS}`;
    throw new ServiceError('VALIDATION_FAILED', `The ${STREAM_TIMEOUT_HEADER} header ${message}.`, {
      errors: [{ path: STREAM_TIMEOUT_HEADER, message }],
    });
  }
  return milliseconds;
}
