import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  type SqliteDatabase as KyselySqliteDatabase,
  Migrator,
  type PostgresDialect,
  SqliteDialect,
  sql,
} from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import { ensurePrivateFile, tightenPermissions } from '../private-files.js';
import { CurrentSchemaPostgresDialect } from './current-schema-dialect.js';
import { migrationProvider } from './migrations/index.js';
import { reportUnavailability } from './postgres-availability.js';
import type { DatabaseSchema } from './schema.js';

/** The database every service uses: one Kysely query path over SQLite or PostgreSQL. */
export interface Database {
  readonly db: Kysely<DatabaseSchema>;
  readonly dialect: 'sqlite' | 'postgres';
  /** Round-trips a trivial query; throws when the database cannot answer. */
  ping(): Promise<void>;
  /**
   * PostgreSQL only: `LISTEN`s on `channel` on a dedicated connection (reconnected after a
   * failure, every second) and hands each notification's payload to `onPayload`. Resolves once
   * listening, or rejects when the first connection fails; the result stops it.
   */
  listen?(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /**
   * PostgreSQL only: the schema to create (if missing) and use through `search_path`. Lets test
   * runs and side-by-side deployments share one database without colliding.
   */
  schema?: string;
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
}

const INT8_OID = 20;

/** How long a query waits for a pooled connection (a new one or a free one) before failing. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Distinct SQL texts whose prepared statements are kept (queries are built from a fixed set). */
const STATEMENT_CACHE_SIZE = 512;

/**
 * Kysely prepares every query anew, and preparing costs more than running most of ours. A SQLite
 * statement can be run again with new parameters, so each distinct SQL text is prepared once and
 * kept (least recently used first out); one that is still being iterated is not shared.
 */
function withStatementCache(database: SqliteDatabase.Database): KyselySqliteDatabase {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => {
      statements.clear();
      database.close();
    },
    prepare(query: string) {
      const cached = statements.get(query);
      statements.delete(query);
      const statement = cached && !cached.busy ? cached : database.prepare(query);
      statements.set(query, statement);
      if (statements.size > STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string);
      return statement;
    },
  };
}

/** SQLite's files for a database: the database itself, then its WAL, shared-memory and journal files. */
export function sqliteFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`, `${file}-journal`];
}

/**
 * The database and everything SQLite keeps beside it are the service's alone (0600). The database
 * file is created private before SQLite opens it, because SQLite gives the WAL and shared-memory
 * files it creates later the database file's own mode.
 */
function makeSqliteFilesPrivate(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const [database, ...companions] = sqliteFiles(file);
  ensurePrivateFile(database as string);
  for (const companion of companions) tightenPermissions(companion);
}

function createSqliteDialect(file: string): SqliteDialect {
  if (file !== ':memory:') makeSqliteFilesPrivate(file);
  const database = new SqliteDatabase(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  return new SqliteDialect({ database: withStatementCache(database) });
}

function postgresConnection(url: string, schema: string | undefined): pg.ClientConfig {
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`Invalid PostgreSQL schema name "${schema}"`);
  }
  return {
    connectionString: url,
    // An unreachable server (packets dropped, not refused) fails the request instead of hanging it.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  };
}

/** A dedicated connection that `LISTEN`s on `channel`, reconnecting after a failure (see `Database.listen`). */
async function listenOn(
  connection: pg.ClientConfig,
  channel: string,
  onPayload: (payload: string) => void,
): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const next = new pg.Client(connection);
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) onPayload(message.payload);
    });
    next.on('error', () => {
      if (client !== next || stopped) return;
      client = undefined;
      next.end().catch(() => undefined);
      scheduleRetry();
    });
    await next.connect();
    await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    if (stopped) {
      await next.end();
      return;
    }
    client = next;
  };
  const scheduleRetry = () => {
    if (stopped) return;
    retry = setTimeout(() => void connect().catch(() => scheduleRetry()), 1_000);
    retry.unref();
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => undefined);
  };
}

function createPostgresDialect(connection: pg.ClientConfig): PostgresDialect {
  const pool = new pg.Pool({
    ...connection,
    max: 10,
    // bigint columns hold epoch milliseconds and byte counts, all far below 2^53.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A server restart cuts every connection. pg reports that as an 'error' event, on the pool for
  // an idle client and on the client itself for one checked out between two queries (a
  // transaction): without listeners either would crash the process. The query in flight fails
  // on its own, and the pool discards a broken client when it is released, so the next query
  // opens a fresh connection: there is nothing more to do here.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return new CurrentSchemaPostgresDialect({ pool: reportUnavailability(pool) });
}

/**
 * Applies every pending migration; throws with the failing migration's name. On PostgreSQL the
 * bookkeeping tables live in the current schema, so deployments in other schemas of the same
 * database never mistake each other's migration state for their own.
 */
export async function migrateToLatest(db: Kysely<DatabaseSchema>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  let migrationTableSchema: string | undefined;
  if (dialect === 'postgres') {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    migrationTableSchema = rows[0]?.schema;
  }
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Database migration ${failed} failed`, { cause: error });
  }
}

/**
 * Opens the configured database and (by default) applies pending migrations.
 *
 * @example
 * const database = await openDatabase({ kind: 'sqlite', file: './data/mordn.db' });
 */
export async function openDatabase(config: DatabaseConfig, options: OpenDatabaseOptions = {}): Promise<Database> {
  const connection = config.kind === 'postgres' ? postgresConnection(config.url, options.schema) : undefined;
  const dialect =
    config.kind === 'sqlite' ? createSqliteDialect(config.file) : createPostgresDialect(connection as pg.ClientConfig);
  const db = new Kysely<DatabaseSchema>({ dialect });
  try {
    if (config.kind === 'postgres' && options.schema) {
      await sql`create schema if not exists ${sql.id(options.schema)}`.execute(db);
    }
    if (options.migrate !== false) await migrateToLatest(db, config.kind);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    db,
    dialect: config.kind,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    ...(connection ? { listen: (channel, onPayload) => listenOn(connection, channel, onPayload) } : {}),
    close: () => db.destroy(),
  };
}
