import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { ServiceError } from '../errors.js';

/**
 * SQLSTATEs that mean the server cannot serve this connection right now, not that the query was
 * wrong: connection exceptions (class 08), shutdown and start-up (57P01–57P03), and a full
 * connection table (53300).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** Messages node-postgres gives the errors of a connection that broke or could not be opened. */
const CONNECTION_FAILURE = /connection terminated|not queryable|timeout exceeded when trying to connect|ECONN|EPIPE/i;

/**
 * Whether a node-postgres error says the database is unreachable (down, restarting, refusing
 * connections) rather than that the query failed. A server-side error counts only for the
 * SQLSTATEs above; anything else pg throws from a query is a broken connection.
 */
export function isPostgresUnavailable(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) {
    const state = error.code ?? '';
    return state.startsWith('08') || UNAVAILABLE_STATES.has(state);
  }
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return (typeof code === 'string' && /^E[A-Z]+$/.test(code)) || CONNECTION_FAILURE.test(error.message);
}

function unavailable(error: unknown): unknown {
  if (!isPostgresUnavailable(error)) return error;
  return new ServiceError(
    'DATABASE_UNAVAILABLE',
    'The database is unavailable; retry shortly (a change sent as the connection dropped may or may not have been made).',
    {
      headers: { 'Retry-After': '1' },
      cause: error,
    },
  );
}

/**
 * Kysely's view of a pg pool in which every failure to reach the database — opening a
 * connection, or a query on a connection that broke — is a `DATABASE_UNAVAILABLE` service error
 * (503) instead of an unexpected one (500). Query errors of a healthy connection pass unchanged.
 */
export function reportUnavailability(pool: pg.Pool): PostgresPool {
  const guardClient = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((...args: Parameters<pg.PoolClient['query']>) => {
      const result = (client.query as (...parameters: unknown[]) => unknown)(...args);
      // A cursor (streamed query) is returned as is; only promises carry a failure to translate.
      return result instanceof Promise
        ? result.catch((error: unknown) => {
            throw unavailable(error);
          })
        : result;
    }) as PostgresPoolClient['query'],
    release: (destroy) => client.release(destroy),
  });
  return {
    connect: async () => {
      try {
        return guardClient(await pool.connect());
      } catch (error) {
        throw unavailable(error);
      }
    },
    end: () => pool.end(),
  };
}
