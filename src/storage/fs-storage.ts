import { createHmac, timingSafeEqual } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ServiceError } from '../errors.js';
import { observeStreamErrors } from '../stream-errors.js';
import { temporaryFilePath } from '../temporary-files.js';
import { wellFormedFilename } from './content-disposition.js';
import { DurableFileWriter, syncDirectory } from './durable-file-writer.js';
import {
  type FileStorage,
  type LocalDownloads,
  type SignedDownload,
  StorageObjectNotFoundError,
} from './file-storage.js';
import { isStoragePath, requireMediaType, requireStoragePath } from './storage-path.js';

export const DEFAULT_DOWNLOAD_ROUTE_PREFIX = '/v1/files/';

export interface FsStorageOptions {
  /** Objects live under `<dataDir>/files/<storage path>`. */
  dataDir: string;
  /** Origin (no trailing slash) the signed URLs point at. */
  publicUrl: string;
  /** HMAC-SHA256 key of the download URLs, at least 32 characters. */
  signingSecret: string;
  /** Upper bound of a URL's lifetime; a longer requested lifetime is cut to it. */
  urlTtlSeconds: number;
  /** Path of the download route; defaults to `/v1/files/`. */
  routePrefix?: string;
  /** Clock in epoch milliseconds (tests move it to mint expired or far-future URLs). */
  now?: () => number;
}

/** URLs minted by another replica whose clock runs slightly ahead still verify. */
const CLOCK_SKEW_SECONDS = 60;
/** Bumped if the signed fields ever change, so old and new URLs cannot be confused. */
const SIGNATURE_VERSION = 'mordn-download-v1';
const EXPIRES = /^\d{1,15}$/;

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/** One message for every refusal, so a caller learns nothing about which check failed. */
function invalidLink(): ServiceError {
  return new ServiceError('INVALID_SIGNATURE', 'The download link is invalid or has expired.');
}

/** The exactly-once value of a query parameter; a repeated one would make its meaning ambiguous. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  return values.length === 1 ? values[0] : undefined;
}

/**
 * Streams `body` into a new private file at `temporary`, checking its length against `size` and
 * flushing it to disk. Errors of `body` itself propagate unchanged (a caller's byte cap, say).
 */
async function writeTemporaryFile(temporary: string, body: Readable, size: number): Promise<void> {
  const writer = new DurableFileWriter(temporary);
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      written += chunk.length;
      if (written > size) callback(new Error(`The body is longer than its declared ${size} bytes.`));
      else callback(null, chunk);
    },
  });
  let written = 0;
  await pipeline(body, counted, writer);
  if (written !== size) throw new Error(`The body is ${written} bytes, not the declared ${size}.`);
}

/**
 * Local-disk storage, the embedded default: objects under `<dataDir>/files/`, downloads through
 * the service's own `GET <routePrefix><storage path>` with HMAC-SHA256-signed, short-lived URLs.
 * Writes go to a private temporary file that is renamed into place only once complete and on
 * disk, so a reader never sees a partial object, even after a crash.
 *
 * The signature covers the storage path, expiry, file name and media type, so none of them can be
 * changed (to serve a file inline as HTML, say) without the secret.
 *
 * @example
 * const { storage, localDownloads } = createFsStorage({
 *   dataDir: config.dataDir, publicUrl: config.publicUrl, signingSecret, urlTtlSeconds: 900,
 * });
 * const url = await storage.signDownloadUrl(storagePath, { filename: 'report.pdf', mediaType: 'application/pdf' });
 */
export function createFsStorage(options: FsStorageOptions): { storage: FileStorage; localDownloads: LocalDownloads } {
  if (options.signingSecret.length < 32) throw new TypeError('The signing secret must be at least 32 characters.');
  if (!Number.isSafeInteger(options.urlTtlSeconds) || options.urlTtlSeconds <= 0) {
    throw new TypeError('urlTtlSeconds must be a positive integer.');
  }
  const routePrefix = options.routePrefix ?? DEFAULT_DOWNLOAD_ROUTE_PREFIX;
  if (!routePrefix.startsWith('/') || !routePrefix.endsWith('/')) {
    throw new TypeError('routePrefix must start and end with "/".');
  }
  const { signingSecret, urlTtlSeconds } = options;
  const publicUrl = options.publicUrl.replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  const root = path.join(options.dataDir, 'files');
  const incoming = path.join(root, '.incoming');
  const objectFile = (key: string) => path.join(root, key);
  const nowSeconds = () => Math.floor(now() / 1000);

  // A JSON array is an unambiguous encoding: no choice of file name can shift bytes between fields.
  const sign = (storagePath: string, expires: string, filename: string, mediaType: string) =>
    createHmac('sha256', signingSecret)
      .update(JSON.stringify([SIGNATURE_VERSION, storagePath, expires, filename, mediaType]))
      .digest('base64url');

  const storage: FileStorage = {
    kind: 'fs',

    // Only the bytes are kept: the media type a download is served with travels in its signed URL.
    async put(key, body, { size }) {
      requireStoragePath(key);
      const temporary = temporaryFilePath(incoming, 'part');
      const target = objectFile(key);
      let renamed = false;
      try {
        await mkdir(incoming, { recursive: true, mode: 0o700 });
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        await writeTemporaryFile(temporary, body, size);
        await rename(temporary, target);
        renamed = true;
        await syncDirectory(path.dirname(target));
      } catch (error) {
        body.destroy();
        // Not durable is not stored: an object whose directory entry may vanish in a crash goes too.
        await rm(renamed ? target : temporary, { force: true });
        throw error;
      }
    },

    async putFile(key, filePath, options) {
      requireStoragePath(key);
      const target = objectFile(key);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const handle = await open(filePath, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const { size } = await handle.stat();
        if (size !== options.size) throw new Error(`The file is ${size} bytes, not the declared ${options.size}.`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      try {
        // Same disk: a rename makes the complete, flushed file appear at once, without a copy.
        await rename(filePath, target);
      } catch (error) {
        if (errorCode(error) !== 'EXDEV') throw error;
        await storage.put(key, createReadStream(filePath), options);
        return;
      }
      try {
        await syncDirectory(path.dirname(target));
      } catch (error) {
        await rm(target, { force: true });
        throw error;
      }
    },

    async get(key) {
      requireStoragePath(key);
      let handle: FileHandle;
      try {
        handle = await open(objectFile(key), constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') throw new StorageObjectNotFoundError(key);
        throw error;
      }
      try {
        // Sized from the open handle, so the size always matches the bytes the stream will read.
        const { size } = await handle.stat();
        return { body: observeStreamErrors(handle.createReadStream()), size };
      } catch (error) {
        await handle.close();
        throw error;
      }
    },

    async delete(key) {
      requireStoragePath(key);
      await rm(objectFile(key), { force: true });
      // A purge must not come back after a crash.
      await syncDirectory(path.dirname(objectFile(key))).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') throw error;
      });
    },

    async signDownloadUrl(key, { filename, mediaType, expiresInSeconds = urlTtlSeconds }) {
      requireStoragePath(key);
      requireMediaType(mediaType);
      if (!(expiresInSeconds > 0)) throw new TypeError('expiresInSeconds must be positive.');
      const lifetime = Math.min(Math.ceil(expiresInSeconds), urlTtlSeconds);
      const expires = String(nowSeconds() + lifetime);
      // The name is signed as it will arrive: a lone surrogate would not survive the URL.
      const name = wellFormedFilename(filename);
      const query = new URLSearchParams({ expires, filename: name, type: mediaType });
      query.set('signature', sign(key, expires, name, mediaType));
      return `${publicUrl}${routePrefix}${key}?${query}`;
    },

    async check() {
      await mkdir(incoming, { recursive: true, mode: 0o700 });
      const probe = temporaryFilePath(incoming, 'probe');
      const handle = await open(probe, 'wx', 0o600);
      await handle.close();
      await rm(probe);
    },
  };

  const localDownloads: LocalDownloads = {
    routePrefix,

    async open(storagePath, query): Promise<SignedDownload> {
      const expires = single(query, 'expires');
      const filename = single(query, 'filename');
      const mediaType = single(query, 'type');
      const signature = single(query, 'signature');
      if (
        !isStoragePath(storagePath) ||
        expires === undefined ||
        filename === undefined ||
        mediaType === undefined ||
        signature === undefined ||
        !EXPIRES.test(expires)
      ) {
        throw invalidLink();
      }
      const expected = Buffer.from(sign(storagePath, expires, filename, mediaType));
      const provided = Buffer.from(signature);
      // A MAC's length is no secret; only the comparison of equal-length values must be constant-time.
      if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) throw invalidLink();
      const expiresAt = Number(expires);
      const current = nowSeconds();
      // A far-future expiry was never issued under the current lifetime bound (it was lowered since).
      if (expiresAt <= current || expiresAt > current + urlTtlSeconds + CLOCK_SKEW_SECONDS) throw invalidLink();

      try {
        const { body, size } = await storage.get(storagePath);
        return { body, size, filename, mediaType, expiresAt };
      } catch (error) {
        if (error instanceof StorageObjectNotFoundError) {
          throw new ServiceError('NOT_FOUND', 'The file no longer exists.');
        }
        throw error;
      }
    },
  };

  return { storage, localDownloads };
}
