import { randomBytes } from 'node:crypto';

export type StoredFileKind = 'upload' | 'artifact';

const PREFIX: Record<StoredFileKind, string> = { upload: 'uploads', artifact: 'artifacts' };
const STORAGE_PATH = /^(?:uploads|artifacts)\/[0-9a-f]{32}$/;

/**
 * A new storage path: a fixed prefix and 128 random bits. It never contains a caller-supplied
 * segment, so it cannot traverse, collide or leak a user's file name.
 */
export function createStoragePath(kind: StoredFileKind): string {
  return `${PREFIX[kind]}/${randomBytes(16).toString('hex')}`;
}

/** Whether `value` has the exact shape of a storage path (no normalisation is ever applied). */
export function isStoragePath(value: string): boolean {
  return STORAGE_PATH.test(value);
}
