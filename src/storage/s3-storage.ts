import { createReadStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { observeStreamErrors } from '../stream-errors.js';
import { attachmentDisposition } from './content-disposition.js';
import { type FileStorage, StorageObjectNotFoundError } from './file-storage.js';
import { requireMediaType, requireStoragePath } from './storage-path.js';

export interface S3ClientOptions {
  region: string;
  /** An S3-compatible server's origin (MinIO, Ceph, R2…); AWS itself when absent. */
  endpoint?: string;
  /** `https://endpoint/bucket/key` rather than `https://bucket.endpoint/key`. */
  forcePathStyle: boolean;
  /** Static credentials; the standard AWS credential chain when absent. */
  credentials?: S3ClientConfig['credentials'];
  /**
   * How long a request may wait for a connection, or stay silent once connected, before it fails
   * (default 30 000 ms). The SDK's own default is to wait forever, so a store that stops
   * answering would hold every upload and its spooled file indefinitely.
   */
  timeoutMs?: number;
  /**
   * When the SDK adds checksums to requests and validates them on responses (default
   * `when_required`). `when_supported` is the SDK's own default and suits AWS S3; several
   * S3-compatible servers (Ceph 16.2's gateway among them) refuse or mangle the `aws-chunked`
   * bodies with trailing CRC32 checksums it then sends.
   */
  checksums?: S3ChecksumPolicy;
}

/** `when_required`: only where an operation demands a checksum; `when_supported`: wherever one fits. */
export type S3ChecksumPolicy = 'when_required' | 'when_supported';

const DEFAULT_TIMEOUT_MS = 30_000;

const SDK_CHECKSUM_POLICY = { when_required: 'WHEN_REQUIRED', when_supported: 'WHEN_SUPPORTED' } as const;

export interface S3StorageOptions extends Omit<S3ClientOptions, 'credentials'> {
  /** A private bucket: nothing here sets ACLs or hands out unsigned URLs. */
  bucket: string;
  /** Upper bound of a presigned URL's lifetime; a longer requested lifetime is cut to it. */
  urlTtlSeconds: number;
  /**
   * Origin that presigned download URLs point at, when browsers reach the store under another
   * name than the service does (compose: `http://minio:9000` inside, `http://localhost:9000`
   * outside). Signing is offline, so nothing is sent to it.
   */
  publicEndpoint?: string;
  /** A ready client (tests pass one with static credentials); built from the options otherwise. */
  client?: S3Client;
  /** Clock in epoch milliseconds, the presigned URLs' signing time (tests mint expired URLs). */
  now?: () => number;
}

/** The SDK would otherwise print some warnings with `console`, past the service's log scrubbing. */
const SILENT_LOGGER = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * An S3 client that works against AWS and S3-compatible servers alike. Unless `checksums` says
 * `when_supported`, the SDK's default `aws-chunked` uploads with trailing checksums are turned
 * off: several S3-compatible servers do not decode them, and would refuse the upload or store the
 * chunk framing as the object's bytes.
 *
 * @example
 * const client = createS3Client({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true });
 */
export function createS3Client(options: S3ClientOptions): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle,
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    requestChecksumCalculation: SDK_CHECKSUM_POLICY[options.checksums ?? 'when_required'],
    responseChecksumValidation: SDK_CHECKSUM_POLICY[options.checksums ?? 'when_required'],
    requestHandler: {
      connectionTimeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      // An inactivity bound, not a total one: a large upload that keeps moving is never cut.
      socketTimeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    },
    logger: SILENT_LOGGER,
  });
}

function isMissingObject(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  // A missing bucket is a misconfiguration, not a missing file: let it surface as an error.
  return error.name === 'NoSuchKey' || (error.$metadata.httpStatusCode === 404 && error.name !== 'NoSuchBucket');
}

/** Passes `body` through, failing as soon as it is longer than `size` or when it ends shorter. */
/**
 * Passes exactly `size` bytes or fails. The latest chunk is held back until the next one arrives
 * or the body ends, so a body that turns out longer fails before S3 has received every declared
 * byte: the PUT can then never complete, and no truncated object can appear.
 */
function exactLength(size: number): Transform {
  let received = 0;
  let held: Buffer | undefined;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > size) {
        callback(new Error(`The body is longer than its declared ${size} bytes.`));
        return;
      }
      const previous = held;
      held = chunk;
      callback(null, previous);
    },
    flush(callback) {
      if (received !== size) {
        callback(new Error(`The body is ${received} bytes, not the declared ${size}.`));
        return;
      }
      callback(null, held);
    },
  });
}

/**
 * S3 (or any S3-compatible server) storage: a private bucket, objects keyed by storage path, and
 * downloads through presigned GET URLs whose `response-content-disposition` (attachment) and
 * `response-content-type` are part of the signed query, so neither can be changed to serve a file
 * inline. A single PUT is atomic on S3: an interrupted upload never becomes visible.
 *
 * @example
 * const storage = createS3Storage({ bucket: 'mordn', region: 'eu-west-1', forcePathStyle: false, urlTtlSeconds: 900 });
 */
export function createS3Storage(options: S3StorageOptions): FileStorage {
  if (!Number.isSafeInteger(options.urlTtlSeconds) || options.urlTtlSeconds <= 0) {
    throw new TypeError('urlTtlSeconds must be a positive integer.');
  }
  const { bucket, urlTtlSeconds } = options;
  const client = options.client ?? createS3Client(options);
  const signer =
    options.publicEndpoint === undefined
      ? client
      : createS3Client({
          region: options.region,
          endpoint: options.publicEndpoint,
          forcePathStyle: options.forcePathStyle,
          credentials: client.config.credentials,
          ...(options.checksums === undefined ? {} : { checksums: options.checksums }),
        });
  const now = options.now ?? Date.now;

  const deleteObject = (key: string) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));

  const storage: FileStorage = {
    kind: 's3',

    putFile(key, filePath, options) {
      return storage.put(key, createReadStream(filePath), options);
    },

    async put(key, body, { contentType, size }) {
      requireStoragePath(key);
      // The SDK pipes the body without watching it for errors: a failing body would leave the
      // request waiting for bytes that never come. Count it, and abort the request on any failure.
      const counted = exactLength(size);
      const abort = new AbortController();
      const streamed = pipeline(body, counted);
      const uploaded = client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: counted,
          ContentLength: size,
          ContentType: contentType,
        }),
        { abortSignal: abort.signal },
      );
      try {
        // Both must succeed: S3 may have accepted `size` bytes of a body that then turned out longer.
        await Promise.all([streamed, uploaded]);
      } catch (error) {
        abort.abort();
        counted.destroy();
        // Let the request finish failing before the best-effort cleanup, so the delete comes last.
        await Promise.allSettled([uploaded]);
        await deleteObject(key).catch(() => undefined);
        throw error;
      }
    },

    async get(key) {
      requireStoragePath(key);
      try {
        const response = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const body = response.Body;
        if (!(body instanceof Readable) || response.ContentLength === undefined) {
          if (body instanceof Readable) body.destroy();
          throw new Error('The S3 response carries no streamed body of known length.');
        }
        return { body: observeStreamErrors(body), size: response.ContentLength };
      } catch (error) {
        if (isMissingObject(error)) throw new StorageObjectNotFoundError(key);
        throw error;
      }
    },

    async delete(key) {
      requireStoragePath(key);
      // S3 answers 204 for a missing key too.
      await deleteObject(key);
    },

    async signDownloadUrl(key, { filename, mediaType, expiresInSeconds = urlTtlSeconds }) {
      requireStoragePath(key);
      requireMediaType(mediaType);
      if (!(expiresInSeconds > 0)) throw new TypeError('expiresInSeconds must be positive.');
      const command = new GetObjectCommand({
        Bucket: bucket,
        Key: key,
        ResponseContentDisposition: attachmentDisposition(filename),
        ResponseContentType: mediaType,
      });
      return getSignedUrl(signer, command, {
        expiresIn: Math.min(Math.ceil(expiresInSeconds), urlTtlSeconds),
        signingDate: new Date(now()),
      });
    },

    async check() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },
  };
  return storage;
}
