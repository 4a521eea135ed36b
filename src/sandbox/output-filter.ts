import type { SandboxConfig } from '../config.js';
import { createSecretScrubber, REDACTED } from '../secrets.js';

/**
 * The output filter every tool result passes before a model sees it: the caller's agent key, any
 * other key-shaped string, the service's configured secrets and the operator's patterns are
 * replaced by `[redacted]`.
 */
export function createToolOutputFilter(
  agentKey: string,
  secretValues: readonly string[],
  operator: Pick<SandboxConfig, 'redactPatterns'>,
): (text: string) => string {
  const scrub = createSecretScrubber([agentKey, ...secretValues]);
  return (text) =>
    operator.redactPatterns.reduce((filtered, pattern) => filtered.replace(pattern, REDACTED), scrub(text));
}
