import { constants, createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ServiceError } from '../errors.js';
import { observeStreamErrors } from '../stream-errors.js';
import { temporaryFilePath } from '../temporary-files.js';
import { createDownloadSigner } from './download-signer.js';
import { DurableFileWriter, syncDirectory } from './durable-file-writer.js';
import { type FileStorage, type LocalDownloads, StorageObjectNotFoundError } from './file-storage.js';
import { requireStoragePath } from './storage-path.js';

export { DEFAULT_DOWNLOAD_ROUTE_PREFIX } from './download-signer.js';

/**
 * Bytes per read of a download. Each chunk costs a file read on the thread pool, a socket write
 * and the stream machinery around both, with one read in flight at a time: 512 KiB reads (an
 * eighth of the turns of the 64 KiB default) measured fastest (256 KiB and 1 MiB were both
 * slower), at up to 512 KiB buffered per download in flight.
 */
const DOWNLOAD_READ_BYTES = 512 * 1024;

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

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
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
  const signer = createDownloadSigner(options);
  const root = path.join(options.dataDir, 'files');
  const incoming = path.join(root, '.incoming');
  const objectFile = (key: string) => path.join(root, key);

  /**
   * Opens an object for reading; `highWaterMark` is the size of each read (the stream default,
   * 64 KiB, unless given). Throws `StorageObjectNotFoundError` when it does not exist.
   */
  async function readObjectFile(key: string, highWaterMark?: number): Promise<{ body: Readable; size: number }> {
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
      const body = handle.createReadStream(highWaterMark === undefined ? {} : { highWaterMark });
      return { body: observeStreamErrors(body), size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

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

    get: (key) => readObjectFile(key),

    async delete(key) {
      requireStoragePath(key);
      await rm(objectFile(key), { force: true });
      // A purge must not come back after a crash.
      await syncDirectory(path.dirname(objectFile(key))).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') throw error;
      });
    },

    async signDownloadUrl(key, options) {
      return signer.sign(key, options);
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
    routePrefix: signer.routePrefix,
    kinds: ['upload', 'artifact'],

    verify: (storagePath, query) => signer.verify(storagePath, query),

    async deliver(storagePath) {
      try {
        const { body, size } = await readObjectFile(storagePath, DOWNLOAD_READ_BYTES);
        return { kind: 'stream', body, size };
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
