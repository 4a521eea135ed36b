import type { Readable } from 'node:stream';
import type { VerifiedLink } from './download-signer.js';
import type { StoredFileKind } from './storage-path.js';

/**
 * Where uploads and published artifacts live: private application storage. Keys are
 * server-generated storage paths (see `createStoragePath`); no caller ever chooses one.
 *
 * Two implementations pass one contract suite: `fs` (embedded default, downloads through the
 * service's HMAC-signed `GET /v1/files/…`) and `s3` (private bucket, presigned GET URLs).
 */
export interface FileStorage {
  readonly kind: 'fs' | 's3';

  /**
   * Stores `body` under `key` and resolves only once the bytes are durable. On failure nothing is
   * left under `key` (no partial object). `size` is the exact byte length of `body`.
   */
  put(key: string, body: Readable, options: { contentType: string; size: number }): Promise<void>;

  /**
   * Stores the local file at `filePath` (exactly `size` bytes) like `put`. Storage on the same
   * disk may move the file into place instead of copying it: the caller hands the file over and
   * must not use it afterwards (removing whatever may be left is fine).
   */
  putFile(key: string, filePath: string, options: { contentType: string; size: number }): Promise<void>;

  /** Streams an object back; throws `StorageObjectNotFoundError` when it does not exist. */
  get(key: string): Promise<{ body: Readable; size: number }>;

  /** Removes an object; removing a missing one succeeds. Throws when storage fails. */
  delete(key: string): Promise<void>;

  /**
   * A short-lived URL that downloads the object as an attachment named `filename` with exactly
   * `mediaType` as its Content-Type. Expiry is `expiresInSeconds`, never above the operator's bound.
   */
  signDownloadUrl(
    key: string,
    options: { filename: string; mediaType: string; expiresInSeconds?: number },
  ): Promise<string>;

  /** Readiness: throws when storage cannot currently be used. */
  check(): Promise<void>;
}

export class StorageObjectNotFoundError extends Error {
  constructor(key: string) {
    super(`No stored object ${key}`);
    this.name = 'StorageObjectNotFoundError';
  }
}

/** How a verified download is answered: bytes streamed by the service, or a redirect. */
export type DownloadDelivery =
  | { kind: 'stream'; body: Readable; size: number }
  | { kind: 'redirect'; location: string };

/**
 * The service's own signed download route. `fs` serves every object through it; `s3` serves
 * published artifacts through it (uploads keep their presigned bucket URLs), so every artifact
 * download passes the registry first. `verify` checks the signature and expiry in constant time
 * and throws `ServiceError('INVALID_SIGNATURE')` (403) for anything tampered or expired.
 */
export interface LocalDownloads {
  /** Path prefix of the download route, e.g. `/v1/files/`. */
  readonly routePrefix: string;
  /** The kinds of object served here: both for `fs`, artifacts only for `s3`. */
  readonly kinds: readonly StoredFileKind[];
  verify(storagePath: string, query: URLSearchParams): VerifiedLink;
  /**
   * Delivers a verified link: `fs` opens the object (`ServiceError('NOT_FOUND')` when it is gone),
   * `s3` presigns a bucket URL living at most 60 s and answers with a redirect to it.
   */
  deliver(storagePath: string, link: VerifiedLink): Promise<DownloadDelivery>;
}

/** The configured storage and the service's signed-download endpoint behind its URLs. */
export interface StorageSetup {
  storage: FileStorage;
  localDownloads?: LocalDownloads;
  /** The secret its links are signed with (`MORDN_SIGNING_SECRET`, or the one kept in the data directory). */
  signingSecret: string;
}
