import { createHmac, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../errors.js';
import { wellFormedFilename } from './content-disposition.js';
import { isStoragePath, requireMediaType, requireStoragePath } from './storage-path.js';

export const DEFAULT_DOWNLOAD_ROUTE_PREFIX = '/v1/files/';

export interface DownloadSignerOptions {
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

/** What a verified link says: the name and type to serve the object with, and its expiry. */
export interface VerifiedLink {
  filename: string;
  mediaType: string;
  /** Epoch seconds after which the URL stops working. */
  expiresAt: number;
}

/**
 * Mints and verifies the service's own download URLs, `GET <routePrefix><storage path>?expires&
 * filename&type&signature`. Local-disk storage serves every object through them; S3 storage
 * serves published artifacts through them, so each download of one passes the registry.
 */
export interface DownloadSigner {
  readonly routePrefix: string;
  sign(key: string, options: { filename: string; mediaType: string; expiresInSeconds?: number }): string;
  /** Throws `ServiceError('INVALID_SIGNATURE')` for anything tampered, expired or malformed. */
  verify(storagePath: string, query: URLSearchParams): VerifiedLink;
}

/** URLs minted by another replica whose clock runs slightly ahead still verify. */
const CLOCK_SKEW_SECONDS = 60;
/** Bumped if the signed fields ever change, so old and new URLs cannot be confused. */
const SIGNATURE_VERSION = 'mordn-download-v1';
const EXPIRES = /^\d{1,15}$/;

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
 * HMAC-SHA256-signed, short-lived download URLs. The signature covers the storage path, expiry,
 * file name and media type, so none of them can be changed (to serve a file inline as HTML, say)
 * without the secret; verification compares in constant time.
 *
 * @example
 * const signer = createDownloadSigner({ publicUrl, signingSecret, urlTtlSeconds: 900 });
 * const url = signer.sign('artifacts/…', { filename: 'report.pdf', mediaType: 'application/pdf' });
 */
export function createDownloadSigner(options: DownloadSignerOptions): DownloadSigner {
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
  const nowSeconds = () => Math.floor(now() / 1000);

  // A JSON array is an unambiguous encoding: no choice of file name can shift bytes between fields.
  const mac = (storagePath: string, expires: string, filename: string, mediaType: string) =>
    createHmac('sha256', signingSecret)
      .update(JSON.stringify([SIGNATURE_VERSION, storagePath, expires, filename, mediaType]))
      .digest('base64url');

  return {
    routePrefix,

    sign(key, { filename, mediaType, expiresInSeconds = urlTtlSeconds }) {
      requireStoragePath(key);
      requireMediaType(mediaType);
      if (!(expiresInSeconds > 0)) throw new TypeError('expiresInSeconds must be positive.');
      const lifetime = Math.min(Math.ceil(expiresInSeconds), urlTtlSeconds);
      const expires = String(nowSeconds() + lifetime);
      // The name is signed as it will arrive: a lone surrogate would not survive the URL.
      const name = wellFormedFilename(filename);
      const query = new URLSearchParams({ expires, filename: name, type: mediaType });
      query.set('signature', mac(key, expires, name, mediaType));
      return `${publicUrl}${routePrefix}${key}?${query}`;
    },

    verify(storagePath, query) {
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
      const expected = Buffer.from(mac(storagePath, expires, filename, mediaType));
      const provided = Buffer.from(signature);
      // A MAC's length is no secret; only the comparison of equal-length values must be constant-time.
      if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) throw invalidLink();
      const expiresAt = Number(expires);
      const current = nowSeconds();
      // A far-future expiry was never issued under the current lifetime bound (it was lowered since).
      if (expiresAt <= current || expiresAt > current + urlTtlSeconds + CLOCK_SKEW_SECONDS) throw invalidLink();
      return { filename, mediaType, expiresAt };
    },
  };
}
