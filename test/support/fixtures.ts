import type { Kysely } from 'kysely';
import { publishConfig, saveDraftConfig } from '../../src/agents/agent-configs.js';
import type { AgentConfig } from '../../src/agents/config-schema.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import type { Permission } from '../../src/auth/permissions.js';
import type { DatabaseSchema } from '../../src/db/schema.js';
import { createAgent, createTenant } from '../../src/tenancy/tenants.js';

export interface AgentFixture {
  tenantId: string;
  agentId: string;
  /** A read+write key. */
  key: string;
  keyId: string;
  /** A read-only key of the same agent. */
  readKey: string;
}

/** A tenant with one agent, a read+write and a read-only key, and optionally a published config. */
export async function createAgentFixture(
  db: Kysely<DatabaseSchema>,
  options: { published?: AgentConfig; tenantId?: string } = {},
): Promise<AgentFixture> {
  const tenantId = options.tenantId ?? (await createTenant(db, 'Tenant')).id;
  const agent = await createAgent(db, tenantId, 'Agent');
  if (options.published) {
    await saveDraftConfig(db, agent.id, options.published);
    await publishConfig(db, agent.id);
  }
  const write = await createApiKey(db, agent.id, ['read', 'write'] satisfies Permission[]);
  const read = await createApiKey(db, agent.id, ['read']);
  return { tenantId, agentId: agent.id, key: write.key, keyId: write.id, readKey: read.key };
}
