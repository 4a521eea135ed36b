import type { Kysely } from 'kysely';
import { SANDBOX_TOOL_NAMES, type SandboxToolName } from '../config.js';
import type { DatabaseSchema } from '../db/schema.js';
import { isServiceError, ServiceError } from '../errors.js';
import { type AgentCredentials, authenticateAgent, readBearerToken } from './authenticate.js';
import type { AgentPrincipal } from './permissions.js';
import { findActiveSandboxToken, looksLikeSandboxToken, sandboxMcpAudience } from './sandbox-tokens.js';
import { parseUserId, USER_HEADER } from './user-id.js';

/** Where the sandbox MCP endpoint is and where its protected-resource metadata is published. */
export interface SandboxMcpResource {
  /** `${MORDN_PUBLIC_URL}/v1/sandbox/mcp`: the audience every token must carry. */
  audience: string;
  /** `${MORDN_PUBLIC_URL}/.well-known/oauth-protected-resource`. */
  metadataUrl: string;
}

/** The well-known path of the protected-resource metadata (RFC 9728 §3). */
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The sandbox MCP resource of a service published at `publicUrl`. */
export function sandboxMcpResource(publicUrl: string): SandboxMcpResource {
  return {
    audience: sandboxMcpAudience(publicUrl),
    metadataUrl: `${publicUrl.replace(/\/+$/, '')}${PROTECTED_RESOURCE_METADATA_PATH}`,
  };
}

/** Who calls the MCP endpoint and which of the sandbox tools that credential reaches. */
export interface SandboxMcpCaller {
  principal: AgentPrincipal;
  tools: readonly SandboxToolName[];
}

/**
 * Authenticates a request to `/v1/sandbox/mcp`, whatever MCP revision it speaks: either an agent
 * key with `X-Chat-User` (as on every agent route), or a per-user sandbox token, whose user comes
 * from the token (an `X-Chat-User` may be sent too, but must name the same user: 400 otherwise).
 * Every 401 points MCP clients at the resource metadata (RFC 9728), which names no authorization
 * server, so they report the failure instead of starting an OAuth flow that cannot succeed.
 */
export async function authenticateSandboxMcpCaller(
  db: Kysely<DatabaseSchema>,
  credentials: AgentCredentials,
  resource: SandboxMcpResource,
): Promise<SandboxMcpCaller> {
  const challenge = `Bearer resource_metadata="${resource.metadataUrl}"`;
  try {
    const bearer = readBearerToken(credentials.authorization, 'INVALID_API_KEY');
    if (bearer === undefined) {
      throw new ServiceError(
        'MISSING_API_KEY',
        'An agent API key (with X-Chat-User) or a sandbox token is required: Authorization: Bearer <key or token>.',
      );
    }
    if (!looksLikeSandboxToken(bearer)) {
      return { principal: await authenticateAgent(db, credentials), tools: SANDBOX_TOOL_NAMES };
    }
    const token = await findActiveSandboxToken(db, bearer, { audience: resource.audience });
    if (!token) {
      throw new ServiceError('INVALID_TOKEN', 'The sandbox token is invalid, expired or revoked.', {
        headers: { 'WWW-Authenticate': `${challenge}, error="invalid_token"` },
      });
    }
    if (credentials.userHeaderValues.length > 0 && parseUserId(credentials.userHeaderValues) !== token.userId) {
      throw new ServiceError('INVALID_USER', `The ${USER_HEADER} header names another user than the sandbox token.`);
    }
    const { tenantId, agentId, keyId, permissions, userId, tokenId } = token;
    return {
      principal: { tenantId, agentId, keyId, permissions, userId, sandboxTokenId: tokenId },
      tools: token.tools,
    };
  } catch (error) {
    // The agent-key path answers with a bare `Bearer` challenge; here every 401 names the metadata.
    if (isServiceError(error) && error.status === 401 && !error.headers?.['WWW-Authenticate']?.includes('resource')) {
      throw new ServiceError(error.code, error.message, { headers: { 'WWW-Authenticate': challenge } });
    }
    throw error;
  }
}
