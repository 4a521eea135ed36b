import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Busboy from 'busboy';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../db/schema.js';
import { isOutOfSpace, ServiceError } from '../errors.js';
import { formatBytes } from '../format.js';
import { CLOSE_CONNECTION, stalledRequest } from '../http/request-body.js';
import type { Logger } from '../logger.js';
import { DurableFileWriter } from '../storage/durable-file-writer.js';
import type { FileStorage } from '../storage/file-storage.js';
import { createStoragePath } from '../storage/storage-path.js';
import { temporaryFilePath } from '../temporary-files.js';
import { admitStoredBytes } from '../usage/limits.js';
import { type FileOwner, registerStoredFile, type StoredFile } from './file-registry.js';
import { sanitizeFilename } from './filename.js';
import { inspectFile } from './inspect.js';
import type { UploadPolicy } from './upload-policy.js';

export interface UploadDependencies {
  db: Kysely<DatabaseSchema>;
  storage: FileStorage;
  /** A private directory for bytes in transit (inside the data dir). */
  tempDir: string;
  /** An upload whose body sends nothing for this long is abandoned (408), so a stalled client holds nothing. */
  idleTimeoutMs: number;
  logger: Logger;
}

export interface IncomingUpload {
  contentType: string | undefined;
  contentLength: string | undefined;
  /** The raw request body. */
  body: Readable | null;
  requestId: string;
}

/** Multipart framing (boundaries, part headers, a small name field) allowed beyond the file cap. */
export const MULTIPART_SLACK_BYTES = 64 * 1024;
const FILE_FIELD = 'file';

/**
 * Refusals raised while the body is still arriving close the connection after answering: the rest
 * of the body is never parsed or stored, only discarded while the connection lingers.
 */
const UNREAD_BODY = CLOSE_CONNECTION;

const tooLarge = (limit: number, what = 'the upload limit') =>
  new ServiceError('FILE_TOO_LARGE', `The file exceeds ${what} of ${formatBytes(limit)}.`, UNREAD_BODY);

const malformed = (message: string) => new ServiceError('INVALID_MULTIPART', message, UNREAD_BODY);

const ONE_FILE_ONLY = `Send exactly one file, in the "${FILE_FIELD}" field.`;
const wrongField = (field: string | undefined) =>
  `Send the file in the "${FILE_FIELD}" field (this form has a file in ${field ? JSON.stringify(field) : 'a field without a name'}).`;

const outOfSpace = (options: { headers?: Record<string, string> } = {}) =>
  new ServiceError(
    'INSUFFICIENT_STORAGE',
    'The server has no disk space left for this file; nothing was stored. Retry later.',
    options,
  );

const interruptedUpload = () =>
  new ServiceError('REQUEST_INTERRUPTED', 'The upload ended before its body was complete.', UNREAD_BODY);

const stalledUpload = (idleTimeoutMs: number) => stalledRequest(idleTimeoutMs, 'The upload');

/** Counts bytes flowing through, failing as soon as the total passes `limit`. */
class ByteCap extends Transform {
  bytes = 0;
  constructor(
    private readonly limit: number,
    private readonly onExceeded: () => Error,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) callback(this.onExceeded());
    else callback(null, chunk);
  }
}

/** Hashes and counts a file's bytes on their way to disk, failing past `limit`. */
class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      callback(tooLarge(this.limit));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }
}

interface SpooledFile {
  tempPath: string;
  filename: string;
  size: number;
  sha256: string;
}

/**
 * Streams the single `file` part of a multipart body to a private temporary file, hashing and
 * counting as it goes. The whole body is capped at the policy's largest size plus framing slack;
 * the file at the policy's largest size. Either cap stops reading at once (413), so an oversized
 * or endless body is never consumed, and the temporary file is removed on every failure.
 */
async function spoolFile(deps: UploadDependencies, policy: UploadPolicy, upload: IncomingUpload): Promise<SpooledFile> {
  const bodyLimit = policy.maxBytes + MULTIPART_SLACK_BYTES;
  if (upload.contentLength !== undefined && Number(upload.contentLength) > bodyLimit) throw tooLarge(policy.maxBytes);
  const source = upload.body;
  if (!source) throw malformed('The request has no body; send multipart/form-data.');

  let parser: Busboy.Busboy;
  try {
    parser = Busboy({
      headers: { 'content-type': upload.contentType ?? '' },
      // Browsers send the file name as raw UTF-8 in `filename="…"`; busboy would read it as latin1.
      // (`filename*=UTF-8''…` names its charset and is decoded by it either way.)
      defParamCharset: 'utf8',
      // One byte over the cap, so a file of exactly the cap is not flagged; `Digest` enforces it.
      limits: { files: 1, fileSize: policy.maxBytes + 1, fields: 8, fieldSize: 8 * 1024, parts: 10, headerPairs: 32 },
    });
  } catch {
    throw malformed('Send the file as multipart/form-data with a boundary.');
  }

  await mkdir(deps.tempDir, { recursive: true, mode: 0o700 }).catch((error: unknown) => {
    throw isOutOfSpace(error) ? outOfSpace(UNREAD_BODY) : error;
  });
  const tempPath = temporaryFilePath(deps.tempDir, 'upload');
  const cap = new ByteCap(bodyLimit, () => tooLarge(policy.maxBytes));
  let writing: Promise<void> | undefined;
  let digest: Digest | undefined;
  let filename = '';

  let stalled = false;
  const received = new Promise<void>((resolve, reject) => {
    let settled = false;
    // Restarted by every chunk of the body and stopped once it has all arrived: it measures how
    // long the client has gone quiet, not how long the upload takes.
    const idleTimer = setTimeout(() => {
      stalled = true;
      fail(stalledUpload(deps.idleTimeoutMs));
    }, deps.idleTimeoutMs);
    // The first failure wins. Reading stops at once; the source is only paused, never destroyed,
    // so the refusal can still be answered (with `Connection: close`) on the same connection.
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(idleTimer);
      source.unpipe(cap);
      source.pause();
      cap.unpipe(parser);
      // Busboy emits `limit` from inside its own write and touches the file stream right after:
      // destroying it synchronously here would crash that write.
      setImmediate(() => parser.destroy());
      reject(error);
    };
    const interrupted = () => fail(interruptedUpload());
    // The body was framed as complete, but the multipart form inside it was cut short.
    // When writing the file fails (a full disk, say), the pipeline destroys the part stream with
    // that same error, which may arrive here before the pipeline itself rejects.
    const partCutShort = (error: Error) =>
      fail(
        isOutOfSpace(error) ? outOfSpace(UNREAD_BODY) : malformed('The multipart body ended before the file part did.'),
      );
    parser.on('file', (field, stream, info) => {
      // Busboy destroys a part stream with an error whenever the form ends or is torn down before
      // the part does (a truncated body, a refusal, a limit). Every part stream gets a listener
      // before anything else, or that error would be thrown as an unhandled 'error' event.
      stream.on('error', partCutShort);
      if (settled || field !== FILE_FIELD || writing) {
        stream.resume();
        fail(malformed(writing ? ONE_FILE_ONLY : wrongField(field)));
        return;
      }
      filename = info.filename ?? '';
      digest = new Digest(policy.maxBytes);
      stream.on('limit', () => fail(tooLarge(policy.maxBytes)));
      // Flushed to disk as it arrives, so storing it afterwards does not wait for a full flush.
      writing = pipeline(stream, digest, new DurableFileWriter(tempPath));
      writing.catch((error: Error) =>
        fail(
          error instanceof ServiceError
            ? error
            : isOutOfSpace(error)
              ? outOfSpace(UNREAD_BODY)
              : malformed('The upload failed.'),
        ),
      );
    });
    parser.on('filesLimit', () => fail(malformed(ONE_FILE_ONLY)));
    parser.on('partsLimit', () => fail(malformed('The form has too many parts.')));
    parser.on('error', () => fail(malformed('The multipart body is malformed.')));
    parser.on('close', () => {
      if (settled) return;
      if (!writing) {
        fail(
          new ServiceError('VALIDATION_FAILED', `The "${FILE_FIELD}" field with a file is required.`, {
            errors: [{ path: FILE_FIELD, message: 'is required' }],
          }),
        );
        return;
      }
      writing.then(() => {
        settled = true;
        clearTimeout(idleTimer);
        resolve();
      }, fail);
    });
    cap.on('error', fail);
    source.on('data', () => idleTimer.refresh());
    source.on('end', () => clearTimeout(idleTimer));
    source.on('error', interrupted);
    source.on('close', () => {
      if (!source.readableEnded) interrupted();
    });
  });
  source.pipe(cap).pipe(parser);

  try {
    await received;
    return { tempPath, filename, size: digest?.bytes ?? 0, sha256: digest?.hash.digest('hex') ?? '' };
  } catch (error) {
    await writing?.catch(() => undefined);
    await rm(tempPath, { force: true });
    if (error instanceof ServiceError && error.code === 'FILE_TOO_LARGE') {
      deps.logger.info(
        { requestId: upload.requestId, bytesRead: cap.bytes, limit: policy.maxBytes },
        'upload refused: too large',
      );
    }
    if (error instanceof ServiceError && error.code === 'INSUFFICIENT_STORAGE') {
      deps.logger.error({ requestId: upload.requestId, bytesRead: cap.bytes }, 'upload refused: the disk is full');
    }
    if (stalled) {
      deps.logger.info(
        { requestId: upload.requestId, bytesRead: cap.bytes, idleTimeoutMs: deps.idleTimeoutMs },
        'upload abandoned: the client stopped sending',
      );
    }
    throw error;
  }
}

/**
 * Receives one upload: stream to a temporary file under a hard cap, let the bytes decide the type
 * (never the client's name or MIME), check the caller's policy for that type, store the bytes
 * durably, and only then register their provenance. If registration fails the stored object is
 * removed again, so there is never an orphan object or a row without bytes.
 */
export async function receiveUpload(
  deps: UploadDependencies,
  owner: FileOwner,
  policy: UploadPolicy,
  upload: IncomingUpload,
): Promise<StoredFile> {
  if (!policy.enabled) throw new ServiceError('UPLOADS_DISABLED', 'This agent does not accept attachments.');
  // At the storage limit already: refused before a byte is read.
  await admitStoredBytes(deps.db, owner, 1);
  const spooled = await spoolFile(deps, policy, upload);
  try {
    const filename = sanitizeFilename(spooled.filename);
    const inspection = await inspectFile(spooled.tempPath, { filename, size: spooled.size });
    const allowed = [...policy.limits.keys()];
    if (!inspection.accepted) {
      throw new ServiceError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Unsupported file: ${inspection.reason} (detected ${inspection.detectedType}; allowed: ${allowed.join(', ')}).`,
      );
    }
    const limit = policy.limits.get(inspection.mediaType);
    if (limit === undefined) {
      throw new ServiceError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Files of type ${inspection.mediaType} are not accepted here (allowed: ${allowed.join(', ')}).`,
      );
    }
    if (spooled.size > limit) throw tooLarge(limit, `the ${inspection.mediaType} limit`);
    await admitStoredBytes(deps.db, owner, spooled.size);

    const file: StoredFile = {
      storagePath: createStoragePath('upload'),
      kind: 'upload',
      filename,
      mediaType: inspection.mediaType,
      size: spooled.size,
      sha256: spooled.sha256,
      createdAt: Date.now(),
    };
    try {
      await deps.storage.putFile(file.storagePath, spooled.tempPath, { contentType: file.mediaType, size: file.size });
    } catch (error) {
      deps.logger.error({ requestId: upload.requestId, err: error }, 'storage refused an upload');
      if (isOutOfSpace(error)) throw outOfSpace();
      throw new ServiceError('STORAGE_UNAVAILABLE', 'File storage is unavailable; nothing was stored. Retry later.');
    }
    try {
      await registerStoredFile(deps.db, owner, file);
    } catch (error) {
      await deps.storage
        .delete(file.storagePath)
        .catch((cleanupError: unknown) =>
          deps.logger.error(
            { requestId: upload.requestId, storagePath: file.storagePath, err: cleanupError },
            'could not remove an unregistered upload',
          ),
        );
      if (isOutOfSpace(error)) {
        deps.logger.error({ requestId: upload.requestId, err: error }, 'the database refused an upload: no space');
        throw outOfSpace();
      }
      throw error;
    }
    return file;
  } finally {
    await rm(spooled.tempPath, { force: true });
  }
}
