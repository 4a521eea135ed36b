import { createUserHash } from './auth/user-hash.js';
import { answerRunsFor } from './chat/answer-runs.js';
import { storeFailedAnswer } from './chat/create-chat-handler.js';
import { agentOfSpace, createDatabaseAnswerStore } from './chat/database-answer-store.js';
import { createDatabaseChatStore } from './chat/database-chat-store.js';
import type { Config } from './config.js';
import { type Database, openDatabase } from './db/database.js';
import type { AppDependencies } from './dependencies.js';
import { createLifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import { createHttpMetrics } from './metrics.js';
import { ExplainedReadinessFailure } from './readiness.js';
import { createSandboxRuntime } from './sandbox/create-sandbox.js';
import type { ResolveAll } from './sandbox/egress/destinations.js';
import type { EgressProxy } from './sandbox/egress/egress-proxy.js';
import type { ToolAuthorizer } from './sandbox/execution-policy.js';
import { createStorage } from './storage/create-storage.js';
import { createUsageRecorder } from './usage/usage-ledger.js';
import type { UsageSink } from './usage/usage-types.js';

export interface ComposeOptions {
  logger: Logger;
  /** Use this database instead of opening the configured one (tests pass an isolated one). */
  database?: Database;
  /** Add Node's process metrics to `/metrics` (the service does; tests do not). */
  processMetrics?: boolean;
  /** Replaces the sandbox backend's cached readiness (tests count or flip it). */
  sandboxReadiness?: () => Promise<boolean>;
  /** The execution policy's custom hook, run before every tool call. */
  authorizeToolCall?: ToolAuthorizer;
  /** The resolver the sandbox egress proxy looks names up with (tests map names to their own addresses). */
  resolve?: ResolveAll;
  /** Meter usage and hold limits (default true; a benchmark turns it off to measure its cost). */
  metering?: boolean;
  /** Where sandbox usage goes instead of the database ledger (tests collect it). */
  usage?: UsageSink;
}

export interface ComposedDependencies extends AppDependencies {
  /** Releases what composing opened (the database, unless it was passed in). */
  close(): Promise<void>;
}

/** The egress proxy's readiness: a proxy that cannot serve fails closed and says why. */
function egressCheck(egress: EgressProxy): () => Promise<void> {
  return async () => {
    const problem = await egress.problem();
    if (problem) throw new ExplainedReadinessFailure(problem);
  };
}

/**
 * Builds every dependency of the app from the configuration: the one place where adapters are
 * chosen, for the service, the benchmarks and the tests alike.
 */
export async function composeDependencies(config: Config, options: ComposeOptions): Promise<ComposedDependencies> {
  const database = options.database ?? (await openDatabase(config.database));
  try {
    const { storage, localDownloads, signingSecret } = await createStorage(config);
    const metrics = createHttpMetrics({ processMetrics: options.processMetrics ?? false });
    const usage = options.metering === false ? undefined : createUsageRecorder(database.db, options.logger);
    const sandboxUsage = options.usage ?? usage;
    const userHash = createUserHash(signingSecret);
    const runtime = createSandboxRuntime(config, {
      logger: options.logger,
      db: database.db,
      metrics,
      ...(options.resolve ? { resolve: options.resolve } : {}),
      ...(options.authorizeToolCall ? { authorize: options.authorizeToolCall } : {}),
      ...(sandboxUsage ? { usage: sandboxUsage } : {}),
    });
    const sandbox = runtime && options.sandboxReadiness ? { ...runtime, isReady: options.sandboxReadiness } : runtime;
    const answerStore = await createDatabaseAnswerStore(database, {
      delivery: config.chatFanout === 'poll' ? 'poll' : 'push',
      onListenError: (error) =>
        options.logger.warn(
          { err: error },
          'answer events: LISTEN does not deliver here (set MORDN_CHAT_FANOUT=poll); polling every 200 ms',
        ),
    });
    const answers = answerRunsFor(answerStore, {
      settleOrphan: (record, message) => {
        const store = createDatabaseChatStore(database.db, agentOfSpace(record.key.space));
        return storeFailedAnswer(store, { userId: record.key.userId }, record.key.chatId, message);
      },
      maxLogBytes: config.chatResumeMaxBytes,
      onError: (error) => options.logger.error({ err: error }, 'resumable answers failed'),
    });
    return {
      answers,
      ...(usage ? { usage } : {}),
      userHash,
      config,
      database,
      logger: options.logger,
      metrics,
      lifecycle: createLifecycle(),
      storage,
      ...(localDownloads ? { localDownloads } : {}),
      ...(sandbox ? { sandbox } : {}),
      readinessChecks: [
        { name: 'storage', check: () => storage.check() },
        ...(sandbox
          ? [
              {
                name: 'sandbox',
                check: async () => {
                  if (await sandbox.isReady()) return;
                  const problem = sandbox.problem?.();
                  throw problem ? new ExplainedReadinessFailure(problem) : new Error('sandbox backend is not ready');
                },
              },
              ...(config.sandbox.egress.enabled && sandbox.egress
                ? [{ name: 'egress', check: egressCheck(sandbox.egress) }]
                : []),
            ]
          : []),
      ],
      close: async () => {
        answers.close();
        await answerStore.close();
        // Workspace sandboxes end with the service (their files stay).
        await runtime?.egress?.close();
        await runtime?.backend.close?.();
        await usage?.flush();
        if (!options.database) await database.close();
      },
    };
  } catch (error) {
    if (!options.database) await database.close();
    throw error;
  }
}
