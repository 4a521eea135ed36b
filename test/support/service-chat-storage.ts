import type { CreateChatHandlerOptions } from '../../src/chat/create-chat-handler.js';
import { createDatabaseChatStore } from '../../src/chat/database-chat-store.js';
import { createServiceAttachmentStorage } from '../../src/chat/service-attachment-storage.js';
import type { TestService } from './service.js';

/**
 * The chat store and attachment storage for a host's `createChatHandler` that keeps its chats and
 * files where the test service keeps them (its database, file storage and logger), scoped to
 * `agent`; `requestId` tags what the storage logs.
 *
 * @example
 * const chat = createChatHandler({
 *   getUserId: () => 'alice',
 *   model,
 *   ...serviceChatStorage(service, agent, 'host'),
 *   getHostedConfig: async () => ({ schemaVersion: 1 }),
 * });
 */
export function serviceChatStorage(
  service: TestService,
  agent: { tenantId: string; agentId: string },
  requestId: string,
): Pick<CreateChatHandlerOptions, 'store' | 'storage'> {
  return {
    store: createDatabaseChatStore(service.database.db, agent),
    storage: createServiceAttachmentStorage(
      { db: service.database.db, storage: service.deps.storage, logger: service.deps.logger },
      agent,
      requestId,
    ),
  };
}
