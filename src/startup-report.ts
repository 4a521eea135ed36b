import type { Config } from './config.js';
import { formatBytes } from './format.js';

/** One line of the start-up report: a fixed subject, whether it is on, and why (or how) in words. */
export interface StartupLine {
  /** What the line is about; also the start of its message. */
  subject: 'model' | 'sandboxes' | 'sandbox egress' | 'admin API and console';
  on: boolean;
  /** Structured facts for log queries; never a secret (no key, token or credential-bearing URL). */
  fields: Record<string, unknown>;
  /** `<subject> on|off: …` — what it means, naming the variable that decides it. */
  message: string;
}

function line(
  subject: StartupLine['subject'],
  on: boolean,
  detail: string,
  fields: Record<string, unknown>,
): StartupLine {
  return { subject, on, fields, message: `${subject} ${on ? 'on' : 'off'}: ${detail}` };
}

function tenantsOf(allowed: string[] | undefined): string {
  if (allowed === undefined) return 'every tenant';
  return allowed.length === 1 ? '1 tenant (listed)' : `${allowed.length} tenants (listed)`;
}

function modelLine(config: Config): StartupLine {
  const model = config.model;
  if (!model) {
    return line('model', false, 'MORDN_MODEL is not set, so POST /v1/chat answers 503 MODEL_NOT_CONFIGURED', {
      variable: 'MORDN_MODEL',
    });
  }
  const name = `${model.provider}:${model.modelId}`;
  return line('model', true, `${name} (MORDN_MODEL)`, { model: name });
}

function sandboxLine(config: Config): StartupLine {
  const sandbox = config.sandbox;
  if (!sandbox.enabled) {
    return line('sandboxes', false, 'MORDN_SANDBOX_ENABLED is not true, so no agent gets sandbox tools', {
      variable: 'MORDN_SANDBOX_ENABLED',
    });
  }
  const weak = sandbox.weakLimits ? ', weak limits (MORDN_SANDBOX_WEAK_LIMITS)' : '';
  return line(
    'sandboxes',
    true,
    `${sandbox.backend} backend (MORDN_SANDBOX_BACKEND) for ${tenantsOf(sandbox.allowedTenants)}${weak}; each agent opts in with runtime.sandbox.enabled in its published config, and GET /readyz says whether this host can run them`,
    { backend: sandbox.backend, weakLimits: sandbox.weakLimits, tenants: sandbox.allowedTenants?.length ?? 'all' },
  );
}

function egressLine(config: Config): StartupLine {
  const egress = config.sandbox.egress;
  if (!config.sandbox.enabled) return line('sandbox egress', false, 'sandboxes are off', {});
  if (!egress.enabled) {
    return line('sandbox egress', false, 'MORDN_SANDBOX_EGRESS is not on, so sandboxed code reaches no network', {
      variable: 'MORDN_SANDBOX_EGRESS',
    });
  }
  const ceiling = {
    tenants: egress.allowedTenants?.length ?? 'all',
    ports: egress.ports,
    packageIndexUrl: egress.packageIndexUrl,
    maxConnections: egress.maxConnections,
    bytesPerDay: egress.bytesPerDay,
    bytesPerSecond: egress.bytesPerSecond,
    privateRanges: egress.privateCidrs.length,
  };
  const ports = egress.ports.length > 0 ? `ports ${egress.ports.join(',')}` : 'any port';
  return line(
    'sandbox egress',
    true,
    `ceiling for ${tenantsOf(egress.allowedTenants)}: ${ports}, package index ${egress.packageIndexUrl}, per workspace ${egress.maxConnections} connections, ${formatBytes(egress.bytesPerDay)} a day, ${formatBytes(egress.bytesPerSecond)}/s, ${egress.privateCidrs.length === 1 ? '1 private range' : `${egress.privateCidrs.length} private ranges`} reachable; each agent's published runtime.sandbox.network opens what it names within it`,
    { ceiling },
  );
}

function consoleLine(config: Config, consoleUrl: string): StartupLine {
  if (config.adminToken === undefined) {
    return line(
      'admin API and console',
      false,
      'MORDN_ADMIN_TOKEN is not set, so /v1/admin/* and the web console at /console/ do not exist',
      { variable: 'MORDN_ADMIN_TOKEN' },
    );
  }
  return line(
    'admin API and console',
    true,
    `open ${consoleUrl} and sign in with the value of MORDN_ADMIN_TOKEN (the admin API takes it as a bearer token)`,
    { console: consoleUrl },
  );
}

/**
 * What a newcomer needs to know from the start-up log: whether a model is configured, whether
 * sandboxes are on (and which backend), the egress ceiling, and the console — each with why when
 * it is off. Pure: facts from the configuration only (the host's readiness is `/readyz`'s).
 *
 * @example
 * for (const each of describeStartup(config, { consoleUrl: 'http://127.0.0.1:8787/console/' })) {
 *   logger.info(each.fields, each.message);
 * }
 */
export function describeStartup(config: Config, options: { consoleUrl: string }): StartupLine[] {
  return [modelLine(config), sandboxLine(config), egressLine(config), consoleLine(config, options.consoleUrl)];
}
