import type { AgentConfig } from '../../src/agents/config-schema.js';
import type { ChatRequestContext } from '../../src/chat/types.js';

/**
 * The context a host's chat handler gives its sandbox integration for one request of `userId` in
 * chat `c1`, under `config`.
 *
 * @example
 * await sandboxes.buildTools(hostedContext(ENABLED, 'alice'), { abortSignal, onArtifact });
 */
export function hostedContext(
  config: AgentConfig,
  userId = 'alice',
  abortSignal: AbortSignal = new AbortController().signal,
): ChatRequestContext {
  return { request: new Request('http://host.example/api/chat'), userId, chatId: 'c1', config, abortSignal };
}
