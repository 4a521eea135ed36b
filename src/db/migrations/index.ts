import type { Migration, MigrationProvider } from 'kysely';
import * as initial from './0001-initial.js';
import * as storedFiles from './0002-stored-files.js';
import * as workspaces from './0003-workspaces.js';
import * as chats from './0004-chats.js';
import * as sandboxTokens from './0005-sandbox-tokens.js';
import * as artifactLifecycle from './0006-artifact-lifecycle.js';
import * as adminAudit from './0007-admin-audit.js';
import * as consoleSessions from './0008-console-sessions.js';
import * as sandboxEgress from './0009-sandbox-egress.js';
import * as chatAnswers from './0010-chat-answers.js';
import * as usage from './0011-usage.js';
import * as workspaceMetering from './0012-workspace-metering.js';

/**
 * Every migration, in order. Migrations are compiled into the service (no directory scanning) and
 * must run unchanged on SQLite and PostgreSQL. Never edit a released migration; add a new one.
 */
const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-stored-files': storedFiles,
  '0003-workspaces': workspaces,
  '0004-chats': chats,
  '0005-sandbox-tokens': sandboxTokens,
  '0006-artifact-lifecycle': artifactLifecycle,
  '0007-admin-audit': adminAudit,
  '0008-console-sessions': consoleSessions,
  '0009-sandbox-egress': sandboxEgress,
  '0010-chat-answers': chatAnswers,
  '0011-usage': usage,
  '0012-workspace-metering': workspaceMetering,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
