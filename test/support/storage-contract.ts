import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFileRoutes } from '../../routes/files.js';
import { ServiceError } from '../../src/errors.js';
import type { AppEnv } from '../../src/http/app-env.js';
import { createOpenApiApp } from '../../src/http/openapi.js';
import { normalizeError, problemResponse } from '../../src/http/problem.js';
import { requestContext } from '../../src/http/request-context.js';
import { createLogger } from '../../src/logger.js';
import { createHttpMetrics } from '../../src/metrics.js';
import { startServer } from '../../src/server.js';
import { attachmentDisposition } from '../../src/storage/content-disposition.js';
import { type FileStorage, type LocalDownloads, StorageObjectNotFoundError } from '../../src/storage/file-storage.js';
import { createFsStorage } from '../../src/storage/fs-storage.js';
import { createStoragePath } from '../../src/storage/storage-path.js';

/** What the contract needs from one adapter. */
export interface StorageUnderTest {
  storage: FileStorage;
  /** Fetches a signed URL as a browser would. */
  fetchDownload(url: string): Promise<Response>;
  /** The URL query parameters that carry the signature, the file name and the media type. */
  parameters: { signature: string; filename: string; mediaType: string };
  /** Whether downloads carry the service's own security headers (only the `fs` route sets them). */
  servesSecurityHeaders: boolean;
  /** A snapshot of everything the storage holds or was asked; equal before and after a refusal. */
  effects(): Promise<unknown>;
  cleanup(): Promise<void>;
}

export interface StorageSetupOptions {
  urlTtlSeconds: number;
  /** The adapter's clock (epoch ms); the contract moves it to mint expired URLs. */
  now: () => number;
}

const TTL_SECONDS = 600;
const NON_ASCII_NAME = 'Résumé – final.pdf';
const NON_ASCII_NAME_ENCODED = "filename*=UTF-8''R%C3%A9sum%C3%A9%20%E2%80%93%20final.pdf";

/** Every file below `directory`, relative and sorted (an empty list when it does not exist). */
export async function listFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** `bytes` as a stream of `chunkSize` pieces that yields to the event loop between them. */
export function chunkedStream(bytes: Buffer, chunkSize = 64 * 1024, failAfter?: { bytes: number; error: Error }) {
  return Readable.from(
    (async function* () {
      for (let offset = 0; offset < bytes.length; offset += chunkSize) {
        if (failAfter && offset >= failAfter.bytes) throw failAfter.error;
        await new Promise((resolve) => setImmediate(resolve));
        yield bytes.subarray(offset, offset + chunkSize);
      }
    })(),
    { objectMode: false },
  );
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** A one-byte change that keeps the value well-formed (hex stays hex, base64url stays base64url). */
function altered(value: string): string {
  const middle = Math.floor(value.length / 2);
  const replacement = value[middle] === 'a' ? 'b' : 'a';
  return `${value.slice(0, middle)}${replacement}${value.slice(middle + 1)}`;
}

/** The lifetime a URL grants, read from its own parameters (`fs` or S3 presigned). */
function urlLifetimeSeconds(url: string, signedAtMs: number): number {
  const query = new URL(url).searchParams;
  const expires = query.get('expires');
  if (expires !== null) return Number(expires) - Math.floor(signedAtMs / 1000);
  return Number(query.get('X-Amz-Expires'));
}

/**
 * The one contract every `FileStorage` adapter passes: exact bytes in and out (streamed, never
 * buffered whole), no partial object after any failure, idempotent delete, storage paths as the
 * only keys, and signed URLs that download as an attachment of exactly the signed type, refuse any
 * tampering or expiry, and never outlive the operator's bound.
 */
export function describeFileStorageContract(
  name: string,
  setup: (options: StorageSetupOptions) => Promise<StorageUnderTest>,
): void {
  describe(`FileStorage contract: ${name}`, () => {
    let subject: StorageUnderTest;
    let clockOffsetMs = 0;
    const now = () => Date.now() + clockOffsetMs;

    beforeAll(async () => {
      subject = await setup({ urlTtlSeconds: TTL_SECONDS, now });
    });
    afterAll(() => subject?.cleanup());

    const putBytes = async (bytes: Buffer, contentType = 'application/octet-stream') => {
      const key = createStoragePath('upload');
      await subject.storage.put(key, chunkedStream(bytes), { contentType, size: bytes.length });
      return key;
    };
    const expectMissing = (key: string) =>
      expect(subject.storage.get(key)).rejects.toBeInstanceOf(StorageObjectNotFoundError);

    it('stores and returns exact bytes with their size', async () => {
      const bytes = Buffer.from('hello, storage\n');
      const key = await putBytes(bytes, 'text/plain');
      const { body, size } = await subject.storage.get(key);
      expect(size).toBe(bytes.length);
      expect((await readAll(body)).equals(bytes)).toBe(true);
    });

    it('streams a 3 MiB random body in and out unchanged, also through a signed URL', async () => {
      const bytes = randomBytes(3 * 1024 * 1024);
      const key = await putBytes(bytes);
      const { body, size } = await subject.storage.get(key);
      expect(size).toBe(bytes.length);
      expect((await readAll(body)).equals(bytes)).toBe(true);
      const url = await subject.storage.signDownloadUrl(key, { filename: 'noise.bin', mediaType: 'application/pdf' });
      const response = await subject.fetchDownload(url);
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it.each([
      ['shorter', 1],
      ['longer', -1],
    ])('refuses a body %s than its declared size and keeps nothing', async (_case, difference) => {
      const bytes = randomBytes(200 * 1024);
      const key = createStoragePath('upload');
      const put = subject.storage.put(key, chunkedStream(bytes), {
        contentType: 'application/pdf',
        size: bytes.length + difference,
      });
      await expect(put).rejects.toThrow(/declared/);
      await expectMissing(key);
    });

    it('keeps nothing when the body fails midway, and rethrows the body’s own error', async () => {
      const bytes = randomBytes(1024 * 1024);
      const failure = new Error('client went away');
      const key = createStoragePath('upload');
      const body = chunkedStream(bytes, 64 * 1024, { bytes: 512 * 1024, error: failure });
      await expect(subject.storage.put(key, body, { contentType: 'application/pdf', size: bytes.length })).rejects.toBe(
        failure,
      );
      expect(body.destroyed).toBe(true);
      await expectMissing(key);
    });

    it('get of a missing object is StorageObjectNotFoundError', async () => {
      await expectMissing(createStoragePath('artifact'));
    });

    it('delete is idempotent and removes the object', async () => {
      const key = await putBytes(Buffer.from('to be deleted'));
      await subject.storage.delete(key);
      await subject.storage.delete(key);
      await subject.storage.delete(createStoragePath('artifact'));
      await expectMissing(key);
    });

    const hex = '0123456789abcdef0123456789abcdef';
    it.each([
      ['a parent reference', '../x'],
      ['a traversal behind a prefix', 'uploads/../../etc/passwd'],
      ['uppercase hex', `uploads/${hex.toUpperCase()}`],
      ['a trailing space', `uploads/${hex} `],
      ['a percent-encoded slash', `uploads%2F${hex}`],
      ['a leading slash', `/uploads/${hex}`],
      ['an unknown prefix', `workspaces/${hex}`],
      ['an empty key', ''],
    ])('refuses %s as a key before touching storage', async (_case, key) => {
      const before = await subject.effects();
      let bodyRead = false;
      const body = new Readable({
        read() {
          bodyRead = true;
          this.push(null);
        },
      });
      await expect(subject.storage.put(key, body, { contentType: 'text/plain', size: 0 })).rejects.toThrow(
        /storage path/,
      );
      await expect(subject.storage.get(key)).rejects.toThrow(/storage path/);
      await expect(subject.storage.delete(key)).rejects.toThrow(/storage path/);
      await expect(
        subject.storage.signDownloadUrl(key, { filename: 'x.txt', mediaType: 'text/plain' }),
      ).rejects.toThrow(/storage path/);
      expect(bodyRead).toBe(false);
      expect(await subject.effects()).toEqual(before);
    });

    describe('signed download URLs', () => {
      // HTML bytes stored as octet-stream: the response must carry the signed type, not a sniffed
      // or stored one.
      const html = Buffer.from('<!doctype html><script>alert(document.cookie)</script>');
      let key: string;
      let url: string;

      beforeAll(async () => {
        key = await putBytes(html, 'application/octet-stream');
        url = await subject.storage.signDownloadUrl(key, { filename: NON_ASCII_NAME, mediaType: 'text/plain' });
      });

      it('downloads exactly the bytes, as an attachment of exactly the signed type', async () => {
        const response = await subject.fetchDownload(url);
        expect(response.status).toBe(200);
        expect(Buffer.from(await response.arrayBuffer()).equals(html)).toBe(true);
        expect(response.headers.get('content-type')).toBe('text/plain');
        expect(response.headers.get('content-length')).toBe(String(html.length));
        const disposition = response.headers.get('content-disposition');
        expect(disposition).toBe(attachmentDisposition(NON_ASCII_NAME));
        expect(disposition).toContain(NON_ASCII_NAME_ENCODED);
        expect(response.headers.get('x-content-type-options')).toBe(subject.servesSecurityHeaders ? 'nosniff' : null);
      });

      it('carries the disposition and type in its signed query', () => {
        const query = new URL(url).searchParams;
        expect(query.get(subject.parameters.mediaType)).toBe('text/plain');
        expect(query.get(subject.parameters.filename)).toContain('final.pdf');
        expect(query.get(subject.parameters.signature)).toBeTruthy();
      });

      const tampered: Array<[string, (query: URLSearchParams, parameters: StorageUnderTest['parameters']) => void]> = [
        ['a changed signature', (query, { signature }) => query.set(signature, altered(query.get(signature) ?? ''))],
        ['a missing signature', (query, { signature }) => query.delete(signature)],
        ['a changed file name', (query, { filename }) => query.set(filename, `${query.get(filename)}.html`)],
        ['a changed type', (query, { mediaType }) => query.set(mediaType, 'text/html')],
      ];
      it.each(tampered)('refuses %s (403)', async (_case, tamper) => {
        const changed = new URL(url);
        tamper(changed.searchParams, subject.parameters);
        expect(changed.href).not.toBe(url);
        const response = await subject.fetchDownload(changed.href);
        expect(response.status).toBe(403);
        expect(Buffer.from(await response.arrayBuffer()).includes(html)).toBe(false);
      });

      it('refuses the signature of one object on another object’s path (403)', async () => {
        const other = await putBytes(Buffer.from('another file'));
        const changed = url.replace(key, other);
        expect(changed).not.toBe(url);
        expect((await subject.fetchDownload(changed)).status).toBe(403);
      });

      it('refuses an expired URL (403)', async () => {
        clockOffsetMs = -(TTL_SECONDS + 120) * 1000;
        let expired: string;
        try {
          expired = await subject.storage.signDownloadUrl(key, { filename: 'a.txt', mediaType: 'text/plain' });
        } finally {
          clockOffsetMs = 0;
        }
        expect((await subject.fetchDownload(expired)).status).toBe(403);
      });

      it('never outlives urlTtlSeconds, and honours a shorter requested lifetime', async () => {
        const signedAt = Date.now();
        const capped = await subject.storage.signDownloadUrl(key, {
          filename: 'a.txt',
          mediaType: 'text/plain',
          expiresInSeconds: 7 * 24 * 3600,
        });
        expect(urlLifetimeSeconds(capped, signedAt)).toBeLessThanOrEqual(TTL_SECONDS);
        expect(urlLifetimeSeconds(capped, signedAt)).toBeGreaterThanOrEqual(TTL_SECONDS - 2);
        const short = await subject.storage.signDownloadUrl(key, {
          filename: 'a.txt',
          mediaType: 'text/plain',
          expiresInSeconds: 120,
        });
        expect(urlLifetimeSeconds(short, signedAt)).toBeLessThanOrEqual(120);
        expect(urlLifetimeSeconds(short, signedAt)).toBeGreaterThanOrEqual(118);
        expect((await subject.fetchDownload(short)).status).toBe(200);
      });

      it('refuses to sign a media type that could not be a header value', async () => {
        await expect(
          subject.storage.signDownloadUrl(key, { filename: 'a.txt', mediaType: 'text/html\r\nSet-Cookie: a=b' }),
        ).rejects.toThrow(TypeError);
      });
    });

    it('check() succeeds while storage is usable', async () => {
      await expect(subject.storage.check()).resolves.toBeUndefined();
    });
  });
}

export interface FsStorageService {
  /** `http://127.0.0.1:<port>`: also the storage's public URL. */
  url: string;
  app: OpenAPIHono<AppEnv>;
  dataDir: string;
  signingSecret: string;
  storage: FileStorage;
  localDownloads: LocalDownloads;
  /** Every log line written so far. */
  logs: string[];
  close(): Promise<void>;
}

/**
 * `fs` storage in a fresh data directory behind a minimal app, over real HTTP on 127.0.0.1: the
 * download route and the same error mapping as `createApp`, nothing else.
 */
export async function startFsStorageService(
  options: { urlTtlSeconds?: number; now?: () => number } = {},
): Promise<FsStorageService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-fs-storage-'));
  const signingSecret = randomBytes(32).toString('base64url');
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const logger = createLogger({ level: 'debug', secrets: [signingSecret], destination });
  let app: OpenAPIHono<AppEnv> | undefined;
  // The public URL is only known once listening, so the app is attached after the server starts.
  const server = await startServer({
    fetch: (request, env) => (app ? app.fetch(request, env) : new Response(null, { status: 503 })),
    host: '127.0.0.1',
    port: 0,
  });
  const { storage, localDownloads } = createFsStorage({
    dataDir,
    publicUrl: server.url,
    signingSecret,
    urlTtlSeconds: options.urlTtlSeconds ?? TTL_SECONDS,
    ...(options.now ? { now: options.now } : {}),
  });
  const files = createOpenApiApp();
  files.use('*', requestContext(logger, createHttpMetrics()));
  registerFileRoutes(files, localDownloads);
  files.notFound((c) =>
    problemResponse(new ServiceError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}.`), c.get('requestId')),
  );
  files.onError((error, c) => {
    const requestId = c.get('requestId') ?? 'unknown';
    const { serviceError, unexpected } = normalizeError(error);
    if (unexpected !== undefined) logger.error({ requestId, err: unexpected }, 'unhandled error');
    return problemResponse(serviceError, requestId);
  });
  app = files;
  return {
    url: server.url,
    app: files,
    dataDir,
    signingSecret,
    storage,
    localDownloads,
    logs,
    close: async () => {
      await server.close(1_000);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
