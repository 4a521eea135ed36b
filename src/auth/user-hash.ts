import { createHmac } from 'node:crypto';

/** Turns a user id into its keyed hash: stable across replicas sharing the key, never reversible without it. */
export type UserHash = (userId: string) => string;

/**
 * The keyed hash of user ids (HMAC-SHA-256 under the service's signing secret, 64 hex digits):
 * what usage rows keep of an erased user, and what traces carry instead of the id.
 *
 * @example
 * const userHash = createUserHash(signingSecret);
 * userHash('alice'); // '5f0c…' (the same on every replica with the same secret)
 */
export function createUserHash(secret: string): UserHash {
  return (userId) => createHmac('sha256', secret).update('mordn-user\0').update(userId).digest('hex');
}
