import { randomBytes, randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, link, mkdir, open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { tightenPermissions } from '../private-files.js';
import { syncDirectory } from './durable-file-writer.js';

/** File name of the generated secret inside the data directory. */
export const SIGNING_SECRET_FILE = 'signing-secret';

/** The same floor `MORDN_SIGNING_SECRET` must meet. */
const MINIMUM_SECRET_LENGTH = 32;

/** Filesystems without hard links answer `link` with one of these. */
const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

async function readSecret(file: string): Promise<string | undefined> {
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const secret = content.trim();
  if (secret.length < MINIMUM_SECRET_LENGTH) {
    // Never quote the content: it is (or was meant to be) a secret.
    throw new Error(
      `${file} does not hold a usable signing secret (at least ${MINIMUM_SECRET_LENGTH} characters); remove it to have a new one created.`,
    );
  }
  return secret;
}

/**
 * Publishes `temporary` under `file` unless `file` already exists. `link` fails rather than
 * overwrite, so of two processes starting at once exactly one wins and both then read its secret.
 */
async function publishOnce(temporary: string, file: string): Promise<void> {
  try {
    await link(temporary, file);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return;
    if (code === undefined || !LINK_UNSUPPORTED.has(code)) throw error;
    // Without hard links, an exclusive copy still never overwrites; a reader racing the copy may
    // see a short file and fail once, which is better than two processes with different secrets.
    await copyFile(temporary, file, constants.COPYFILE_EXCL).catch((copyError: unknown) => {
      if (errorCode(copyError) !== 'EEXIST') throw copyError;
    });
  }
}

/**
 * The HMAC key for `fs` download URLs when the operator has not set `MORDN_SIGNING_SECRET`: read
 * from `<dataDir>/signing-secret`, or created there on first start (32 random bytes, base64url,
 * mode 0600; an existing one readable by others is tightened to 0600). Creation writes a private
 * temporary file and links it into place without ever overwriting, so processes sharing a data
 * directory agree on one secret even when they start together, and a crash never leaves a
 * half-written secret behind.
 *
 * @example
 * const signingSecret = config.signingSecret ?? (await loadOrCreateSigningSecret(config.dataDir));
 */
export async function loadOrCreateSigningSecret(dataDir: string): Promise<string> {
  const file = path.join(dataDir, SIGNING_SECRET_FILE);
  // A secret copied in or restored from a backup may have arrived readable by others.
  tightenPermissions(file);
  const existing = await readSecret(file);
  if (existing !== undefined) return existing;

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dataDir, `.${SIGNING_SECRET_FILE}.${randomUUID()}.tmp`);
  try {
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(randomBytes(32).toString('base64url'));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await publishOnce(temporary, file);
    await syncDirectory(dataDir);
  } finally {
    await rm(temporary, { force: true });
  }

  const secret = await readSecret(file);
  if (secret === undefined) throw new Error(`${file} disappeared while it was being created.`);
  return secret;
}
