import type { Readable } from 'node:stream';

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

/** What a verified signed download (the `fs` adapter's `GET /v1/files/…`) serves. */
export interface SignedDownload {
  body: Readable;
  size: number;
  filename: string;
  mediaType: string;
  /** Epoch seconds after which the URL stops working. */
  expiresAt: number;
}

/**
 * Served by the service itself for storage that has no URL of its own (`fs`). `open` verifies the
 * signature and expiry in constant time and throws `ServiceError('INVALID_SIGNATURE')` (403) for
 * anything tampered or expired, `ServiceError('NOT_FOUND')` when the object is gone.
 */
export interface LocalDownloads {
  /** Path prefix of the download route, e.g. `/v1/files/`. */
  readonly routePrefix: string;
  open(storagePath: string, query: URLSearchParams): Promise<SignedDownload>;
}

/** The configured storage and, for `fs`, the signed-download endpoint behind its URLs. */
export interface StorageSetup {
  storage: FileStorage;
  localDownloads?: LocalDownloads;
}
