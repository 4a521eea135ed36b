import { randomBytes } from 'node:crypto';

/** Kinds of identifiers and their prefixes, so an id says what it names (`agt_…` is an agent). */
export const ID_PREFIX = {
  tenant: 'ten',
  agent: 'agt',
  apiKey: 'key',
  workspace: 'ws',
  lease: 'lease',
  sandboxToken: 'tok',
  auditEntry: 'aud',
  toolCall: 'call',
  consoleSession: 'cs',
  egressDecision: 'egr',
} as const;

/**
 * A new random identifier: the kind's prefix and 96 random bits in hex.
 *
 * @example
 * createId('tenant') // 'ten_3f9c1a0e5b7d2c4e6a8b0c1d'
 */
export function createId(kind: keyof typeof ID_PREFIX): string {
  return `${ID_PREFIX[kind]}_${randomBytes(12).toString('hex')}`;
}
