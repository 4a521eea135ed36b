import type { Attributes } from '@opentelemetry/api';
import type { UserHash } from '../auth/user-hash.js';

/**
 * Who a span is about: the tenant and agent ids, the user only as the service's keyed hash (the
 * same `erased:<hash>` an erased user's usage rows carry), never the id itself.
 *
 * @example
 * span.setAttributes(principalAttributes(principal, deps.userHash));
 */
export function principalAttributes(
  principal: { tenantId: string; agentId: string; userId: string },
  userHash: UserHash | undefined,
): Attributes {
  return {
    'mordn.tenant.id': principal.tenantId,
    'mordn.agent.id': principal.agentId,
    ...(userHash ? { 'enduser.pseudo.id': userHash(principal.userId) } : {}),
  };
}
