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

/** Storage adapters refuse any other key before touching storage: a caller bug, never user input. */
export function requireStoragePath(key: string): void {
  if (!isStoragePath(key)) throw new TypeError('Refusing a key that is not a storage path.');
}

/** An RFC 9110 token: what media types and their parameters are made of. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** `type/subtype` with optional token parameters: anything else could not be a header value. */
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=${TOKEN})*$`);

/** Download URLs carry the media type into a response header, so it must be one. */
export function requireMediaType(mediaType: string): void {
  if (!MEDIA_TYPE.test(mediaType)) throw new TypeError('mediaType is not a valid media type.');
}
