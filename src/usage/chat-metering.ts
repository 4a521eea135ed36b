import type { Kysely } from 'kysely';
import type { ChatMetering } from '../chat/create-chat-handler.js';
import type { DatabaseSchema } from '../db/schema.js';
import { admitTurn } from './limits.js';
import { reportsUsage, stepTokens } from './turn-usage.js';
import type { UsageOwner, UsageSink } from './usage-types.js';

/**
 * The metering of the service's own chat turns (`POST /v1/chat`, console previews, and so
 * `createMordnHandler` hosts): a turn of a tenant or agent at a token limit is refused before the
 * model is called; each finished step adds its tokens, the first step the turn itself (and, when
 * the provider reported no usage, one turn without usage).
 *
 * @example
 * createChatHandler({ ...options, metering: chatMetering(db, deps.usage, { tenantId, agentId, userId }) });
 */
export function chatMetering(db: Kysely<DatabaseSchema>, usage: UsageSink, owner: UsageOwner): ChatMetering {
  return {
    admit: () => admitTurn(db, owner, Date.now()),
    step: (_context, step) => {
      const turn = step.first ? { turns: 1, turnsWithoutUsage: reportsUsage(step.usage) ? 0 : 1 } : {};
      usage.add(owner, { ...stepTokens(step.usage), ...turn });
    },
  };
}
