import { ServiceError } from '../errors.js';

export const PERMISSIONS = ['read', 'write'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * Who is calling an agent route: the agent (and its tenant) the key belongs to, the key's
 * permissions and the verified end user from `X-Chat-User`. This is the whole scope of a request;
 * nothing in a body, path or tool argument may widen or replace it.
 */
export interface AgentPrincipal {
  readonly tenantId: string;
  readonly agentId: string;
  readonly keyId: string;
  readonly permissions: readonly Permission[];
  readonly userId: string;
  /** Set when the caller holds a per-user sandbox token rather than the agent key. */
  readonly sandboxTokenId?: string;
  /** Set for the web console's preview chat: the signed-in console session it runs for. */
  readonly consoleSessionId?: string;
}

/** Throws 403 `INSUFFICIENT_PERMISSION` unless the key (or sandbox token) carries `permission`. */
export function requirePermission(principal: AgentPrincipal, permission: Permission): void {
  if (!principal.permissions.includes(permission)) {
    const credential = principal.sandboxTokenId === undefined ? 'API key' : 'sandbox token';
    throw new ServiceError(
      'INSUFFICIENT_PERMISSION',
      `This ${credential} lacks the "${permission}" permission required by this operation.`,
    );
  }
}

export function serializePermissions(permissions: readonly Permission[]): string {
  return PERMISSIONS.filter((permission) => permissions.includes(permission)).join(',');
}

export function parsePermissions(stored: string): Permission[] {
  return PERMISSIONS.filter((permission) => stored.split(',').includes(permission));
}
