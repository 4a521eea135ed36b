import { defineConfig } from 'vitest/config';

/**
 * Three projects: pure unit tests beside the code (`src/**`), and the integration suite (`test/**`)
 * run once on SQLite and once on PostgreSQL, selected by MORDN_TEST_DATABASE. Suites that touch
 * no database (the sandbox backend contract) run in the SQLite project only; suites that need a
 * database several processes share (replicas) run in the PostgreSQL project only.
 */
const DATABASE_FREE = [
  'test/sandbox-bwrap.test.ts',
  'test/sandbox-docker.test.ts',
  'test/hosted-fetch.test.ts',
  'test/scripted-model.test.ts',
];
const POSTGRES_ONLY = ['test/replicas.test.ts'];
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts'],
          exclude: POSTGRES_ONLY,
          env: { MORDN_TEST_DATABASE: 'sqlite' },
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/*.test.ts'],
          exclude: DATABASE_FREE,
          env: { MORDN_TEST_DATABASE: 'postgres' },
          globalSetup: ['test/support/postgres-global-setup.ts'],
        },
      },
    ],
  },
});
