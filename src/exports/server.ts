/**
 * `mordn/server`: the chat handler for your own process (`createChatHandler` and its types).
 * The chat engine lands with the chat issue; until then this entry exports the shared
 * domain error type only.
 */
export { type ErrorCode, ServiceError } from '../errors.js';
