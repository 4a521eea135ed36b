import pg from 'pg';
import { testPostgresUrl } from './database.js';

/** Fails the PostgreSQL project early, with a clear message, when the server is not reachable. */
export default async function checkPostgres(): Promise<void> {
  const client = new pg.Client({ connectionString: testPostgresUrl(), connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${testPostgresUrl()} (set MORDN_TEST_POSTGRES_URL): ${String(error)}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
