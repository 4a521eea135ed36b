/** Sandbox egress in the operator's words: refusal reasons, destinations and the operator's ceiling. Pure. */
import type { EgressCeiling, EgressReason } from './types.js';

const REASONS: Record<EgressReason, string> = {
  policy: "Not in the agent's network policy",
  egress_off: 'Network access is off for this workspace',
  private_address: 'Private, local or reserved address',
  port: 'Port not allowed',
  method: 'Request type the proxy does not forward',
  limit: "Workspace's network limit reached",
  resolve_failed: 'Name could not be resolved',
};

/** Why a connection was refused, in plain words; "—" for an allowed one. */
export function describeReason(reason: EgressReason | null): string {
  if (reason === null) return '—';
  return REASONS[reason] ?? reason;
}

/** `host:port`, an IPv6 literal in brackets (`[fd00::1]:443`). */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Whether the operator lets sandbox network access out for one tenant's agents, and if not, why. */
export type EgressStanding = 'open' | 'sandboxes-off' | 'egress-off' | 'tenant-not-listed';

/** The standing of `tenantId` under the operator's switches (as the server decides it). */
export function egressStanding(
  sandbox: { operatorEnabled: boolean; egress: EgressCeiling },
  tenantId: string,
): EgressStanding {
  if (!sandbox.operatorEnabled) return 'sandboxes-off';
  if (!sandbox.egress.enabled) return 'egress-off';
  if (sandbox.egress.tenants !== null && !sandbox.egress.tenants.includes(tenantId)) return 'tenant-not-listed';
  return 'open';
}

const STANDING: Record<EgressStanding, string> = {
  open: 'The operator allows sandbox network access for this tenant, within the limits below.',
  'sandboxes-off':
    'The operator keeps sandboxes, and so sandbox network access, off; this setting takes effect only when it is on.',
  'egress-off': 'The operator keeps sandbox network access off; this setting takes effect only when it is on.',
  'tenant-not-listed':
    'The operator keeps sandbox network access off for this tenant; this setting takes effect only when it is on.',
};

/** One sentence saying what the operator's ceiling means for the agent's network setting. */
export function describeStanding(standing: EgressStanding): string {
  return STANDING[standing];
}

/** The tenants egress opens for, as the status page says it. */
export function describeTenants(tenants: string[] | null): string {
  if (tenants === null) return 'all tenants';
  if (tenants.length === 0) return 'no tenant';
  return tenants.length === 1 ? `tenant ${tenants[0]}` : `tenants ${tenants.join(', ')}`;
}

/** `[80, 443]` → "80, 443"; "none" for an empty list. */
export function describePorts(ports: number[]): string {
  return ports.length === 0 ? 'none' : ports.join(', ');
}
