import { API_KEY_PATTERN } from './auth/api-keys.js';

export const REDACTED = '[redacted]';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * One global pattern matching every secret: anything shaped like an agent API key, plus the given
 * literal values as text (the longest first, so no tail of a longer secret is left behind).
 */
export function secretPattern(secrets: readonly string[]): RegExp {
  const literals = [...new Set(secrets.filter((secret) => secret.length > 0))]
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp);
  return new RegExp([API_KEY_PATTERN.source, ...literals].join('|'), 'g');
}

/**
 * Builds a function that replaces every secret in a text with `[redacted]`: anything shaped like
 * an agent API key, plus the given literal values (admin token, provider and storage credentials).
 * Used on every log line and, later, on tool output before a model sees it.
 *
 * @example
 * const scrub = createSecretScrubber([config.adminToken]);
 * scrub('token=abc…') // 'token=[redacted]'
 */
export function createSecretScrubber(secrets: readonly string[]): (text: string) => string {
  const pattern = secretPattern(secrets);
  return (text) => text.replace(pattern, REDACTED);
}
