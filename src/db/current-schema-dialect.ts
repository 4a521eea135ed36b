import {
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Kysely,
  PostgresDialect,
  type SchemaMetadata,
  sql,
  type TableMetadata,
} from 'kysely';

/**
 * Kysely's PostgreSQL dialect, introspecting the current schema only.
 *
 * Kysely's own introspector reads every column of every schema in the database (the migrator asks
 * it whether its bookkeeping tables exist at each start). That read fails when another schema is
 * dropped or altered meanwhile ("schema … does not exist"), so a deployment would fail to start
 * while another one in the same database migrates, and it grows with every schema there. This one
 * lists the tables and views of `current_schema()`, without their columns: all the migrator needs.
 *
 * @example
 * const db = new Kysely<DatabaseSchema>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
 */
export class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}

class CurrentSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<SchemaMetadata>`select current_schema() as name`.execute(this.db);
    return rows;
  }

  /** The current schema's tables and views (with no columns listed). */
  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, n.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
      order by c.relname`.execute(this.db);
    return rows.map((row) => ({ name: row.name, schema: row.schema, isView: row.kind === 'v', columns: [] }));
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}
