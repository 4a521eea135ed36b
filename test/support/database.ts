import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.js';
import { type Database, openDatabase } from '../../src/db/database.js';
import { removeWorkspacesRoot } from './workspace-roots.js';

export type TestDialect = 'sqlite' | 'postgres';

/** Which database this run of the suite uses (set per vitest project). */
export function testDialect(): TestDialect {
  const dialect = process.env.MORDN_TEST_DATABASE ?? 'sqlite';
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`Unknown MORDN_TEST_DATABASE "${dialect}"`);
  return dialect;
}

export function testPostgresUrl(): string {
  return process.env.MORDN_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

/**
 * An isolated place for one test's data: a fresh SQLite file in a temporary directory, or a fresh
 * PostgreSQL schema. `environment` configures a child process to use the same place.
 */
export interface TestDatabaseTarget {
  dialect: TestDialect;
  dataDir: string;
  config: DatabaseConfig;
  schema: string | undefined;
  /** Environment variables (MORDN_DATA_DIR, DATABASE_URL) pointing a process at this target. */
  environment: Record<string, string>;
  open(): Promise<Database>;
  destroy(): Promise<void>;
}

export async function createTestDatabaseTarget(): Promise<TestDatabaseTarget> {
  const dialect = testDialect();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-test-'));
  if (dialect === 'sqlite') {
    const config: DatabaseConfig = { kind: 'sqlite', file: path.join(dataDir, 'mordn.db') };
    return {
      dialect,
      dataDir,
      config,
      schema: undefined,
      environment: { MORDN_DATA_DIR: dataDir },
      open: () => openDatabase(config),
      destroy: () => removeWorkspacesRoot(dataDir),
    };
  }
  const schema = `test_${process.pid}_${randomBytes(6).toString('hex')}`;
  const baseUrl = testPostgresUrl();
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  const url = new URL(baseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const config: DatabaseConfig = { kind: 'postgres', url: baseUrl };
  return {
    dialect,
    dataDir,
    config,
    schema,
    environment: { MORDN_DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    open: () => openDatabase(config, { schema }),
    destroy: async () => {
      const cleanup = new pg.Client({ connectionString: baseUrl });
      await cleanup.connect();
      await cleanup.query(`drop schema if exists ${schema} cascade`);
      await cleanup.end();
      await removeWorkspacesRoot(dataDir);
    },
  };
}

/** A migrated database in its own isolated place; `close()` also removes it. */
export async function createTestDatabase(): Promise<Database & { target: TestDatabaseTarget }> {
  const target = await createTestDatabaseTarget();
  const database = await target.open();
  return {
    ...database,
    target,
    close: async () => {
      await database.close();
      await target.destroy();
    },
  };
}

/**
 * Every workspace row as a request could have changed it, in id order. The `meter_*` columns are left
 * out: they are the metering's bookkeeping, and a reading taken after an earlier call may land at any
 * time.
 */
export async function workspaceRowsWithoutMeter(database: Database): Promise<Array<Record<string, unknown>>> {
  const rows = await database.db.selectFrom('workspaces').selectAll().orderBy('id').execute();
  return rows.map((row) => Object.fromEntries(Object.entries(row).filter(([column]) => !column.startsWith('meter_'))));
}
