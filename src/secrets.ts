import { API_KEY_PATTERN } from './auth/api-keys.js';

export const REDACTED = '[redacted]';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
  const literals = [...new Set(secrets.filter((secret) => secret.length > 0))]
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp);
  const pattern = new RegExp([API_KEY_PATTERN.source, ...literals].join('|'), 'g');
  return (text) => text.replace(pattern, REDACTED);
}
