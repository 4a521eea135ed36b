import type { SandboxConfig } from '../config.js';
import { REDACTED, secretPattern } from '../secrets.js';

/**
 * Redacts a text (see `createToolOutputFilter`), and tells where it would: what live output needs
 * to cut a text only between two secrets, never inside one.
 */
export interface ToolOutputFilter {
  (text: string): string;
  /** `[start, end)` (UTF-16 indexes) of every match of every pattern in `text`, as given. */
  spans(text: string): Array<[number, number]>;
}

/**
 * The output filter every tool result passes before a model sees it: the caller's agent key, any
 * other key-shaped string, the service's configured secrets and the operator's patterns are
 * replaced by `[redacted]`.
 *
 * @example
 * const filter = createToolOutputFilter(agentKey, config.secretValues, config.sandbox);
 * filter(`key=${agentKey}`); // 'key=[redacted]'
 * filter.spans(`key=${agentKey}`); // [[4, 4 + agentKey.length]]
 */
export function createToolOutputFilter(
  agentKey: string,
  secretValues: readonly string[],
  operator: Pick<SandboxConfig, 'redactPatterns'>,
): ToolOutputFilter {
  const secrets = secretPattern([agentKey, ...secretValues]);
  const filter = (text: string) =>
    operator.redactPatterns.reduce(
      (filtered, pattern) => filtered.replace(pattern, REDACTED),
      text.replace(secrets, REDACTED),
    );
  // matchAll needs global patterns; the configuration makes them so, a hand-built one may not be.
  const searched = [secrets, ...operator.redactPatterns].map((pattern) =>
    pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`),
  );
  const spans = (text: string): Array<[number, number]> => {
    const found: Array<[number, number]> = [];
    for (const pattern of searched) {
      for (const match of text.matchAll(pattern)) found.push([match.index, match.index + match[0].length]);
    }
    return found;
  };
  return Object.assign(filter, { spans });
}
