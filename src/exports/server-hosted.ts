/**
 * `mordn/server/hosted`: `createMordnHandler` and `createHostedSandboxes`, for hosts that call a
 * Mordn service. They land with the chat issue; until then this entry exports the shared
 * domain error type only.
 */
export { type ErrorCode, ServiceError } from '../errors.js';
