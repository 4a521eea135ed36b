/**
 * `mordn/server/hosted`: for hosts that call a Mordn API — route handlers for a Next.js route
 * (`createMordnHandler`) and the managed-sandbox integration for `createChatHandler`
 * (`createHostedSandboxes`), and `mintSandboxToken` for handing one user's sandbox to a
 * third-party MCP client.
 */

export type { ManagedSandboxIntegration } from '../chat/types.js';
export { createHostedSandboxes, type HostedOptions, toolResultValue } from '../hosted/create-hosted-sandboxes.js';
export { createMordnHandler, type MordnHandler, type MordnHandlerOptions } from '../hosted/create-mordn-handler.js';
export {
  type MintedSandboxToken,
  type MintSandboxTokenOptions,
  mintSandboxToken,
  SandboxTokenError,
} from '../hosted/mint-sandbox-token.js';
