import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Four projects: pure unit tests beside the code (`src/**`), the integration suite (`test/**`)
 * run once on SQLite and once on PostgreSQL, selected by MORDN_TEST_DATABASE, and the end-to-end
 * suite (`test/e2e/**`), run once, which packs the library, installs it into the Next.js example,
 * builds that and drives it in Chromium. Suites that touch no database (the sandbox backend
 * contract), or whose database is not what they test (the request fuzz), run in the SQLite
 * project only; suites that need a database several processes share
 * (replicas) run in the PostgreSQL project only.
 */
const DATABASE_FREE = [
  'test/sandbox-bwrap.test.ts',
  'test/sandbox-docker.test.ts',
  'test/sandbox-containment.test.ts',
  'test/sandbox-cgroups.test.ts',
  'test/sandbox-seccomp.test.ts',
  'test/sandbox-quota-filesystem.test.ts',
  'test/sandbox-warm.test.ts',
  'test/sandbox-egress-bypass.test.ts',
  'test/sandbox-egress-docker.test.ts',
  'test/sandbox-runtime.test.ts',
  'test/hosted-fetch.test.ts',
  'test/scripted-model.test.ts',
  'test/request-fuzz.test.ts',
  'test/sandbox-mcp-progress.test.ts',
  'test/chat-live-output.test.ts',
  'test/docs-links.test.ts',
  'test/fault-disk-full.test.ts',
  'test/fault-storage.test.ts',
  'test/fault-sandbox-backend.test.ts',
  'test/tracing.test.ts',
];
const POSTGRES_ONLY = [
  'test/replicas.test.ts',
  'test/sandbox-tokens-replicas.test.ts',
  'test/fault-postgres.test.ts',
  'test/chat-answers-replicas.test.ts',
  'test/usage-replicas.test.ts',
];
const END_TO_END = 'test/e2e/**';
export default defineConfig({
  test: {
    // Most files wait on processes, sockets and sandboxes rather than compute: two run at once even
    // on a 2-core machine (Vitest's default there is one), and never more than four.
    maxWorkers: Math.min(4, Math.max(2, availableParallelism())),
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts'],
          exclude: [...POSTGRES_ONLY, END_TO_END],
          env: { MORDN_TEST_DATABASE: 'sqlite' },
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/*.test.ts'],
          exclude: [...DATABASE_FREE, END_TO_END],
          env: { MORDN_TEST_DATABASE: 'postgres' },
          globalSetup: ['test/support/postgres-global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: [`${END_TO_END}/*.test.ts`],
          env: { MORDN_TEST_DATABASE: 'sqlite' },
          // Packs the library and installs and builds the example once (minutes on a small machine).
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 240_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
