import { ServiceError } from '../errors.js';

export const USER_HEADER = 'X-Chat-User';
export const MAX_USER_ID_LENGTH = 256;
const ANONYMOUS_PREFIX = 'anon:';

/** Printable ASCII except the comma, with the space allowed inside but not at either end. */
const USER_ID_PATTERN = /^[\x21-\x2b\x2d-\x7e](?:[\x20-\x2b\x2d-\x7e]*[\x21-\x2b\x2d-\x7e])?$/;

/**
 * Validates the verified end-user id sent in `X-Chat-User`. `values` holds every occurrence of
 * the header: a repeated header is refused rather than merged, so two ids never blur into one.
 * The id is used exactly as sent: nothing is trimmed, case-folded or otherwise normalised, and
 * anything that could be (a non-ASCII space, a control or non-ASCII byte) is refused instead, as
 * is a comma, which is how HTTP joins a repeated header into one value.
 *
 * @example
 * parseUserId(['user-123']); // 'user-123'
 * parseUserId(['alice\u00a0']); // throws 400 INVALID_USER
 */
export function parseUserId(values: readonly string[]): string {
  if (values.length === 0) {
    throw new ServiceError('MISSING_USER', `The ${USER_HEADER} header with the verified user id is required.`);
  }
  if (values.length > 1) {
    throw new ServiceError('INVALID_USER', `The ${USER_HEADER} header must be sent exactly once.`);
  }
  const userId = values[0] as string;
  if (userId.length === 0 || userId.length > MAX_USER_ID_LENGTH) {
    throw new ServiceError(
      'INVALID_USER',
      `The ${USER_HEADER} header must be 1 to ${MAX_USER_ID_LENGTH} characters long (got ${userId.length}).`,
    );
  }
  if (userId.includes(',')) {
    throw new ServiceError(
      'INVALID_USER',
      `The ${USER_HEADER} header must not contain a comma (a repeated header arrives joined by commas).`,
    );
  }
  if (!USER_ID_PATTERN.test(userId)) {
    throw new ServiceError(
      'INVALID_USER',
      `The ${USER_HEADER} header may contain only printable ASCII characters, without leading or trailing spaces.`,
    );
  }
  return userId;
}

/**
 * Whether `userId` names an anonymous visitor: it starts with `anon:` in any letter case
 * (`ANON:`, `Anon:`), so no spelling of the prefix slips past a refusal.
 */
export function isAnonymousUserId(userId: string): boolean {
  return userId.slice(0, ANONYMOUS_PREFIX.length).toLowerCase() === ANONYMOUS_PREFIX;
}

/**
 * Sandbox-related operations need a signed-in user: `anon:` ids (any case) are refused with 403
 * `ANONYMOUS_USER`, whatever the helper in front of the API already checked.
 */
export function rejectAnonymousUser(userId: string): void {
  if (isAnonymousUserId(userId)) {
    throw new ServiceError('ANONYMOUS_USER', 'Managed sandboxes require a verified, signed-in user (not "anon:").');
  }
}
