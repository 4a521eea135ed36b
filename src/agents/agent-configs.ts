import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { ServiceError } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import { type AgentConfig, AgentConfigSchema, DEFAULT_AGENT_CONFIG } from './config-schema.js';

type Db = Kysely<DatabaseSchema>;

export interface AgentConfigVersions {
  draft: AgentConfig | null;
  published: AgentConfig | null;
}

async function requireAgent(db: Db, agentId: string): Promise<void> {
  const agent = await db.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  if (!agent) throw new ServiceError('NOT_FOUND', 'No such agent.');
}

function parseStored(json: string | null): AgentConfig | null {
  return json === null ? null : AgentConfigSchema.parse(JSON.parse(json));
}

/**
 * Validates and stores a draft. A draft never changes what `published` returns or what the API's
 * gates see. Throws 400 naming each offending key, 404 for an unknown agent.
 */
export async function saveDraftConfig(db: Db, agentId: string, input: unknown): Promise<AgentConfig> {
  await requireAgent(db, agentId);
  const draft = parseOrThrow(AgentConfigSchema, input, 'agent config');
  const now = Date.now();
  const json = JSON.stringify(draft);
  await db
    .insertInto('agent_configs')
    .values({ agent_id: agentId, draft: json, draft_updated_at: now, published: null, published_at: null })
    .onConflict((conflict) => conflict.column('agent_id').doUpdateSet({ draft: json, draft_updated_at: now }))
    .execute();
  return draft;
}

/** Publishes the current draft. Throws 409 `NO_DRAFT_CONFIG` when there is nothing to publish. */
export async function publishConfig(db: Db, agentId: string): Promise<AgentConfig> {
  await requireAgent(db, agentId);
  return db.transaction().execute(async (transaction) => {
    const row = await transaction
      .selectFrom('agent_configs')
      .select(['draft', 'published_version'])
      .where('agent_id', '=', agentId)
      .executeTakeFirst();
    const draft = parseStored(row?.draft ?? null);
    if (!row || !draft) {
      throw new ServiceError('NO_DRAFT_CONFIG', 'This agent has no draft config to publish; PUT one first.');
    }
    await transaction
      .updateTable('agent_configs')
      .set({ published: row.draft, published_at: Date.now(), published_version: row.published_version + 1 })
      .where('agent_id', '=', agentId)
      .execute();
    return draft;
  });
}

export async function getConfigVersions(db: Db, agentId: string): Promise<AgentConfigVersions> {
  await requireAgent(db, agentId);
  const row = await db
    .selectFrom('agent_configs')
    .select(['draft', 'published'])
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
  return { draft: parseStored(row?.draft ?? null), published: parseStored(row?.published ?? null) };
}

/** The configuration the API's gates use: the published one, or the default when none is. */
/** What the console preview runs: the saved draft, else the published config, else the default. */
export async function getPreviewConfig(db: Db, agentId: string): Promise<AgentConfig> {
  const row = await db
    .selectFrom('agent_configs')
    .select(['draft', 'published'])
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
  return parseStored(row?.draft ?? null) ?? parseStored(row?.published ?? null) ?? DEFAULT_AGENT_CONFIG;
}

export async function getEffectiveConfig(db: Db, agentId: string): Promise<AgentConfig> {
  const row = await db
    .selectFrom('agent_configs')
    .select('published')
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
  return parseStored(row?.published ?? null) ?? DEFAULT_AGENT_CONFIG;
}
