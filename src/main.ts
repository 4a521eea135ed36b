import { sweepExpiredConsoleSessions } from './admin/console-sessions.js';
import { erasureDependencies } from './admin/erasure.js';
import { createApp } from './app.js';
import { sweepDownloadAudit } from './artifacts/download-audit.js';
import { composeDependencies } from './compose.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { secureDataDirectory, temporaryDirectories } from './data-directory.js';
import { createLogger } from './logger.js';
import { runPeriodically } from './periodic.js';
import { type PermissionRepair, PrivatePathError } from './private-files.js';
import { sweepEgressLog } from './sandbox/egress/egress-log.js';
import { startRetentionSweeper } from './sandbox/retention.js';
import { startServer } from './server.js';
import { describeStartup } from './startup-report.js';
import { startTracing } from './telemetry/start-tracing.js';
import { removeOrphanedTemporaryFiles } from './temporary-files.js';
import { sweepUsage } from './usage/usage-ledger.js';

/**
 * Reads the configuration, or prints what is wrong (naming each variable) and exits with 1.
 * Only process entry points call this.
 */
export function loadConfigOrExit(environment: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(environment);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * Creates the data directory private, or makes an existing one private (see
 * `secureDataDirectory`), returning what it changed; when it cannot (another user owns it, or it
 * is not a directory) it prints why, naming the path, and exits with 1. Only process entry points
 * call this.
 */
export function secureDataDirectoryOrExit(config: Config): PermissionRepair[] {
  try {
    return secureDataDirectory(config);
  } catch (error) {
    if (error instanceof PrivatePathError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * The service process: configuration → private data directory (without the temporary files a
 * crashed process left) → dependencies → HTTP server,
 * with graceful shutdown on SIGTERM/SIGINT (stop accepting, finish in-flight requests within the
 * bound, stop the sandboxes (bwrap: and unmount the workspace filesystems they used), close the
 * database).
 * Once listening it logs what is on and off, and why (see `describeStartup`).
 */
export async function runService(environment: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = loadConfigOrExit(environment);
  const repairs = secureDataDirectoryOrExit(config);
  const logger = createLogger({ level: config.logLevel, secrets: config.secretValues });
  for (const repair of repairs) logger.warn(repair, 'made a data directory path private');
  const orphans = await removeOrphanedTemporaryFiles(temporaryDirectories(config.dataDir));
  if (orphans.length > 0) logger.warn({ files: orphans }, 'removed temporary files a stopped process left');
  // Before anything that may trace: only `mordn serve` starts the SDK and its exporter.
  const tracing = await startTracing(config.telemetry);
  if (tracing) logger.info({ protocol: config.telemetry.protocol }, 'OpenTelemetry traces on');
  const deps = await composeDependencies(config, { logger, processMetrics: true });
  const app = createApp(deps);
  const stopSweeper = deps.sandbox
    ? startRetentionSweeper({
        db: deps.database.db,
        backend: deps.sandbox.backend,
        logger,
        retentionDays: config.sandbox.retentionDays,
      })
    : undefined;
  // Running sandboxes' memory and every workspace's disk, once per sampling interval.
  const stopUsageSampler = deps.sandbox?.meter?.start();
  // Download records past their retention go hourly, whether or not files are downloaded.
  const stopAuditSweeper = runPeriodically(
    () => sweepDownloadAudit(deps.database.db, config.downloadAuditRetentionDays),
    60 * 60 * 1000,
    (error) => logger.error({ err: error }, 'download audit sweep failed'),
  );
  // Egress decisions (and daily byte counts) past their retention, hourly too.
  const stopEgressSweeper = deps.sandbox
    ? runPeriodically(
        () => sweepEgressLog(deps.database.db, config.sandbox.egress.logRetentionDays),
        60 * 60 * 1000,
        (error) => logger.error({ err: error }, 'egress log sweep failed'),
      )
    : undefined;
  // Usage rows past their retention, hourly.
  const stopUsageSweeper = runPeriodically(
    () => sweepUsage(deps.database.db, config.usageRetentionDays),
    60 * 60 * 1000,
    (error) => logger.error({ err: error }, 'usage sweep failed'),
  );
  // Console sessions that expired unattended: their preview users' data goes hourly too.
  const stopConsoleSweeper = config.adminToken
    ? runPeriodically(
        () => sweepExpiredConsoleSessions(erasureDependencies(deps)),
        60 * 60 * 1000,
        (error) => logger.error({ err: error }, 'console session sweep failed'),
      )
    : undefined;
  const server = await startServer({
    fetch: app.fetch,
    host: config.host,
    port: config.port,
    logger,
    requestHeadTimeoutMs: config.requestIdleTimeoutMs,
  });
  deps.selfBaseUrl = server.loopbackUrl;
  logger.info(
    {
      url: server.url,
      database: deps.database.dialect,
      storage: config.storage.kind,
      adminApi: config.adminToken !== undefined,
      sandboxes: config.sandbox.enabled,
    },
    'mordn listening',
  );
  // What is on and off, and why: the first thing a newcomer looks for in the log.
  const origin = config.port === 0 && config.publicUrl.endsWith(':0') ? server.loopbackUrl : config.publicUrl;
  for (const line of describeStartup(config, { consoleUrl: `${origin}/console/` })) {
    logger.info({ on: line.on, ...line.fields }, line.message);
  }

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
    deps.lifecycle.startDraining();
    stopSweeper?.();
    stopAuditSweeper();
    stopEgressSweeper?.();
    stopConsoleSweeper?.();
    stopUsageSweeper();
    stopUsageSampler?.();
    try {
      // Answers that run detached (no request holds them) get the same time as requests; then
      // they are stored `failed` and their readers ended.
      await Promise.all([server.close(config.shutdownTimeoutMs), deps.answers.drain(config.shutdownTimeoutMs)]);
      await deps.close();
      await tracing?.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'traces not flushed'));
      logger.info('shutdown complete');
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exitCode = 1;
    } finally {
      // Let the last lines reach stdout before exiting.
      logger.flush(() => process.exit());
    }
  };
  process.once('SIGTERM', (signal) => void shutdown(signal));
  process.once('SIGINT', (signal) => void shutdown(signal));
}
