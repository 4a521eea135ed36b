import type { Kysely } from 'kysely';
import { publishConfig, saveDraftConfig } from './agents/agent-configs.js';
import { DEFAULT_AGENT_CONFIG } from './agents/config-schema.js';
import { createApiKey } from './auth/api-keys.js';
import type { Permission } from './auth/permissions.js';
import type { DatabaseSchema } from './db/schema.js';
import { type Agent, countTenants, createAgent, createTenant, type Tenant } from './tenancy/tenants.js';

export type InitResult =
  | { status: 'created'; tenant: Tenant; agent: Agent; key: { id: string; key: string; permissions: Permission[] } }
  | { status: 'exists'; tenants: number };

/**
 * First-run setup for an empty database: a tenant, an agent with a published default config and a
 * read+write key. On a database that already has tenants it changes nothing, so running it twice
 * never mints a second unexpected key.
 */
export async function initialize(db: Kysely<DatabaseSchema>): Promise<InitResult> {
  const tenants = await countTenants(db);
  if (tenants > 0) return { status: 'exists', tenants };
  const tenant = await createTenant(db, 'Default tenant');
  const agent = await createAgent(db, tenant.id, 'Default agent');
  await saveDraftConfig(db, agent.id, DEFAULT_AGENT_CONFIG);
  await publishConfig(db, agent.id);
  const key = await createApiKey(db, agent.id, ['read', 'write']);
  return { status: 'created', tenant, agent, key };
}

/** How to reach the admin API and the console: both exist only with `MORDN_ADMIN_TOKEN`. */
function adminLines(publicUrl: string, adminToken: boolean): string[] {
  const consoleUrl = `${publicUrl}/console/`;
  if (adminToken) {
    return [
      'The admin API (/v1/admin/*) and the web console need MORDN_ADMIN_TOKEN; it is set here.',
      `With the service running, open ${consoleUrl} and sign in with its value.`,
    ];
  }
  return [
    'The admin API (/v1/admin/*) and the web console need MORDN_ADMIN_TOKEN (16 characters or more),',
    'which is not set here, so both are off. Start the service with one, and keep it: you sign in with it.',
    '',
    '  export MORDN_ADMIN_TOKEN="$(openssl rand -hex 32)"',
    '  npm start',
    '',
    `Then open ${consoleUrl} and sign in with the value of MORDN_ADMIN_TOKEN.`,
  ];
}

/**
 * What a newcomer needs for a first request and for the admin API and the console, for the
 * terminal. `publicUrl` is `MORDN_PUBLIC_URL` (default `http://127.0.0.1:$PORT`); `adminToken`
 * says whether `MORDN_ADMIN_TOKEN` is set. The curl command comes last, so it can be copied whole.
 *
 * @example
 * process.stdout.write(describeInitResult(result, config.publicUrl, { adminToken: config.adminToken !== undefined }));
 */
export function describeInitResult(
  result: InitResult,
  publicUrl: string,
  options: { adminToken?: boolean } = {},
): string {
  const admin = adminLines(publicUrl, options.adminToken ?? false);
  if (result.status === 'exists') {
    return [
      `This database already has ${result.tenants} tenant(s); nothing was created.`,
      'Issue a new key with the admin API: POST /v1/admin/agents/<agentId>/keys (see the README), or in the console.',
      '',
      ...admin,
      '',
    ].join('\n');
  }
  return [
    'Mordn is initialised.',
    '',
    `  tenant  ${result.tenant.id}  (${result.tenant.name})`,
    `  agent   ${result.agent.id}  (${result.agent.name}, default config published)`,
    `  key     ${result.key.key}`,
    `          id ${result.key.id}, permissions ${result.key.permissions.join(' + ')}`,
    '',
    'The key is shown only now and stored hashed: keep it in your backend, never in a browser.',
    '',
    ...admin,
    '',
    'With the service running (npm start), a first authenticated request:',
    '',
    `  curl -s ${publicUrl}/v1/me \\`,
    `    -H 'Authorization: Bearer ${result.key.key}' \\`,
    `    -H 'X-Chat-User: user-123'`,
    '',
  ].join('\n');
}
