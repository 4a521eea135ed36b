import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { sqliteFiles } from './db/database.js';
import { type PermissionRepair, PrivatePathError, tightenPermissions } from './private-files.js';
import { SIGNING_SECRET_FILE } from './storage/signing-secret.js';

/** The directories the service keeps in its data directory. */
const PRIVATE_DIRECTORIES = ['workspaces', 'files', 'tmp'];

/** Whether this configuration keeps anything in the data directory (else it need not exist). */
function usesDataDirectory(config: Pick<Config, 'database' | 'storage' | 'sandbox'>): boolean {
  return config.database.kind === 'sqlite' || config.storage.kind === 'fs' || config.sandbox.enabled;
}

/**
 * Makes the data directory private to the service's user, whether it is new or was created
 * beforehand (an image's `mkdir -p /data`, a provisioning script, a volume): it is created with
 * mode 0700 when the configuration needs it, or tightened to 0700 when it exists, and so are the
 * embedded database with its WAL, shared-memory and journal files and the signing secret
 * (0600), and the workspaces, storage and temporary directories (0700). Anything owned by
 * another user is refused rather than fixed. Returns every change made, for the start-up log.
 *
 * @example
 * for (const repair of secureDataDirectory(config)) logger.warn(repair, 'tightened permissions');
 */
export function secureDataDirectory(
  config: Pick<Config, 'dataDir' | 'database' | 'storage' | 'sandbox'>,
): PermissionRepair[] {
  const { dataDir } = config;
  if (usesDataDirectory(config)) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dataDir).isDirectory();
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return [];
    throw error;
  }
  if (!isDirectory) throw new PrivatePathError(`MORDN_DATA_DIR ${dataDir} is not a directory.`);
  // The directory itself may be a symbolic link to a volume: its target is what gets secured.
  const repairs = [tightenPermissions(dataDir, { followLinks: true, label: 'MORDN_DATA_DIR' })];
  const files = [path.join(dataDir, SIGNING_SECRET_FILE)];
  if (config.database.kind === 'sqlite') files.push(...sqliteFiles(config.database.file));
  for (const file of files) repairs.push(tightenPermissions(file));
  for (const name of PRIVATE_DIRECTORIES) repairs.push(tightenPermissions(path.join(dataDir, name)));
  return repairs.filter((repair): repair is PermissionRepair => repair !== undefined);
}

/**
 * The data directory's places for bytes in transit: uploads and published files being received
 * (`tmp/`) and objects being written into local storage (`files/.incoming/`).
 */
export function temporaryDirectories(dataDir: string): string[] {
  return [path.join(dataDir, 'tmp'), path.join(dataDir, 'files', '.incoming')];
}
