import type { AgentConfig } from '../../agents/config-schema.js';
import { requestedNetworkPolicy } from '../../agents/config-schema.js';
import type { EgressConfig } from '../../config.js';
import { type HostRule, parseHostRule, type RequestedHost, ruleNamesHost } from '../../host-rules.js';

/** Why the proxy refused a connection (the audit's `reason`). */
export type RefusalReason =
  | 'policy'
  | 'egress_off'
  | 'private_address'
  | 'port'
  | 'method'
  | 'limit'
  | 'resolve_failed';

/** What one workspace may reach right now: the agent's published policy under the operator's ceiling. */
export interface EffectivePolicy {
  /** `none` also when the operator keeps egress closed for the tenant (see `closedByOperator`). */
  mode: 'none' | 'packages' | 'allowlist';
  /** The agent asked for a network the operator does not open (egress off, or not for this tenant). */
  closedByOperator: boolean;
  /** Every destination the policy opens, package index included. */
  rules: readonly HostRule[];
  /** What the agent's allowlist names (for the model; the package index is said apart). */
  allowed: readonly string[];
  /** The ports any connection may use. */
  ports: ReadonlySet<number>;
  /** The package index pip is pointed at. */
  packageIndexUrl: string;
}

/** The rules the package index opens: its URL's host and port, and the operator's extra hosts. */
export function packageIndexRules(config: Pick<EgressConfig, 'packageIndexUrl' | 'packageIndexHosts'>): HostRule[] {
  const url = new URL(config.packageIndexUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const index = parseHostRule(`${url.hostname}:${port}`);
  return [...('error' in index ? [] : [index]), ...config.packageIndexHosts];
}

/**
 * The policy a workspace of `tenantId`'s agent has under `config`, from the agent's **published**
 * config: what it asked for when the operator has egress on for the tenant, nothing otherwise.
 *
 * @example
 * const policy = effectivePolicy(config.sandbox.egress, principal.tenantId, publishedConfig);
 * decide(policy, { kind: 'name', host: 'pypi.org', port: 443 }); // { allowed: true } in packages mode
 */
export function effectivePolicy(config: EgressConfig, tenantId: string, published: AgentConfig): EffectivePolicy {
  const requested = requestedNetworkPolicy(published);
  const open = config.enabled && (config.allowedTenants === undefined || config.allowedTenants.includes(tenantId));
  const base = { ports: new Set(config.ports), packageIndexUrl: config.packageIndexUrl };
  if (requested.mode === 'none' || !open) {
    return { ...base, mode: 'none', closedByOperator: requested.mode !== 'none', rules: [], allowed: [] };
  }
  const index = packageIndexRules(config);
  if (requested.mode === 'packages')
    return { ...base, mode: 'packages', closedByOperator: false, rules: index, allowed: [] };
  const allowed = requested.allow.flatMap((entry) => {
    const rule = parseHostRule(entry);
    return 'error' in rule ? [] : [rule];
  });
  return {
    ...base,
    mode: 'allowlist',
    closedByOperator: false,
    rules: [...allowed, ...index],
    allowed: requested.allow,
  };
}

/**
 * Whether `policy` lets a connection to `requested` through: only a rule naming the requested
 * host (an IP rule only its own literal) on a port both the rule and the operator allow.
 */
export function decide(
  policy: EffectivePolicy,
  requested: RequestedHost,
): { allowed: true } | { allowed: false; reason: RefusalReason } {
  if (policy.mode === 'none') return { allowed: false, reason: policy.closedByOperator ? 'egress_off' : 'policy' };
  const hostMatches = policy.rules.filter((rule) => ruleNamesHost(rule, requested));
  if (hostMatches.length === 0) return { allowed: false, reason: 'policy' };
  if (!policy.ports.has(requested.port)) return { allowed: false, reason: 'port' };
  return hostMatches.some((rule) => rule.port === undefined || rule.port === requested.port)
    ? { allowed: true }
    : { allowed: false, reason: 'port' };
}
