/**
 * `mordn/server`: the chat handler for your own process.
 *
 * @example
 * import { createChatHandler } from 'mordn/server';
 * import { createHostedSandboxes } from 'mordn/server/hosted';
 */
export type {
  AnswerChunks,
  AnswerEvent,
  AnswerKey,
  AnswerProgress,
  AnswerRecord,
  AnswerScope,
  AnswerStore,
} from '../chat/answer-store.js';
export { type ArtifactCarrier, isArtifactCarrier, type PublishedFile } from '../chat/artifact-carrier.js';
export {
  type ChatHandler,
  type CreateChatHandlerOptions,
  createChatHandler,
  type HostLanguageModel,
  RESERVED_TOOL_NAMES,
} from '../chat/create-chat-handler.js';
export type { InterruptionReason, MordnMessageMetadata } from '../chat/interrupted-message.js';
export type { LanguageModelV4 } from '../chat/language-model-v4.js';
export { createMemoryAnswerStore } from '../chat/memory-answer-store.js';
export type { RemoteMcpServer } from '../chat/remote-mcp-tools.js';
export type {
  AttachmentOwner,
  AttachmentStorage,
  BuiltTools,
  ChatRequestContext,
  ChatScope,
  ChatStore,
  ManagedSandboxIntegration,
  SandboxAvailability,
  StoredAttachment,
} from '../chat/types.js';
export { type ErrorCode, ServiceError } from '../errors.js';
