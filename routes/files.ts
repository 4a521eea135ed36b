import type { ServerResponse } from 'node:http';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { CLIENT_CLOSED } from '../src/artifacts/download-audit.js';
import type { ArtifactDownloadGuard } from '../src/artifacts/download-guard.js';
import { ServiceError } from '../src/errors.js';
import type { AppEnv } from '../src/http/app-env.js';
import { problemResponses } from '../src/http/openapi.js';
import { ALL_UPLOAD_TYPES } from '../src/media-types.js';
import { attachmentDisposition } from '../src/storage/content-disposition.js';
import type { LocalDownloads } from '../src/storage/file-storage.js';

/**
 * Headers of every download. The body is user-supplied bytes served from the service's own origin:
 * it must never render there (attachment, no sniffing, a sandboxing CSP with nothing allowed),
 * never be cached by shared caches, and never leak its signed URL through a Referer. Downloads are
 * started from the integrator's pages on another origin, so cross-origin embedding is allowed.
 */
const DOWNLOAD_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'private, no-store',
  'Content-Security-Policy': "default-src 'none'; sandbox",
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'Referrer-Policy': 'no-referrer',
} as const;

/** A redirect to storage: never cached anywhere, and its target never leaked through a Referer. */
const REDIRECT_HEADERS = { 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' } as const;

const ARTIFACT_PREFIX = 'artifacts/';

const header = (description: string) => ({ schema: { type: 'string' as const }, description });

/**
 * The headers of a download besides `Content-Type` (OpenAPI documents that through `content`):
 * the fixed ones above with their exact values.
 */
const DOCUMENTED_DOWNLOAD_HEADERS = {
  'Content-Length': { schema: { type: 'integer' as const }, description: 'The size of the file in bytes.' },
  'Content-Disposition': header(
    '`attachment` with the signed file name: an ASCII `filename="…"` fallback and `filename*=UTF-8\'\'…` (RFC 6266).',
  ),
  ...Object.fromEntries(Object.entries(DOWNLOAD_HEADERS).map(([name, value]) => [name, header(`\`${value}\`.`)])),
};

/**
 * What a download's body can be: the media type its bytes were detected as when it was uploaded
 * or published, one of the types the service accepts at all. No other type is ever stored.
 */
const DOWNLOAD_CONTENT = Object.fromEntries(
  ALL_UPLOAD_TYPES.map((mediaType) => [mediaType, { schema: z.string().openapi({ format: 'binary' }) }]),
);

function downloadRoute(routePrefix: string) {
  return createRoute({
    method: 'get',
    path: `${routePrefix}{kind}/{id}`,
    tags: ['Files'],
    summary:
      'Download a stored file through a signed URL (every file under local-disk storage; published artifacts under S3).',
    description:
      'The URL comes from the service (uploads, chat history, published artifacts) and works until it expires. ' +
      'Tampered, expired and malformed links are all 403 `INVALID_SIGNATURE`; a deleted file is 404 `NOT_FOUND`, and so is a revoked artifact. ' +
      'Whether an artifact is still published is checked on every request, and every artifact download is recorded in its download audit.',
    request: {
      params: z.object({
        kind: z.enum(['uploads', 'artifacts']).openapi({ param: { name: 'kind', in: 'path' } }),
        id: z
          .string()
          .regex(/^[0-9a-f]{32}$/)
          .openapi({ param: { name: 'id', in: 'path' }, example: '9f86d081884c7d659a2feaa0c55ad015' }),
      }),
      query: z.object({
        expires: z.string().openapi({ description: 'Expiry, epoch seconds.', example: '1767225600' }),
        filename: z.string().openapi({ description: 'File name the download is saved under.' }),
        type: z
          .enum(ALL_UPLOAD_TYPES as [string, ...string[]])
          .openapi({ description: 'Content-Type of the download: the stored media type.', example: 'application/pdf' }),
        signature: z.string().openapi({ description: 'HMAC-SHA256 of the path and the other parameters.' }),
      }),
    },
    responses: {
      200: {
        description:
          'The file, as an attachment, sent as the media type its bytes were detected as (the signed `type`). HEAD answers the same headers without the body.',
        headers: DOCUMENTED_DOWNLOAD_HEADERS,
        content: DOWNLOAD_CONTENT,
      },
      302: {
        description:
          'S3 storage, published artifacts: a redirect to a presigned storage URL that lives at most 60 seconds (the window in which a revocation may not yet stop a download already redirected).',
        headers: {
          Location: header('The presigned storage URL.'),
          'Cache-Control': header('`no-store`.'),
          'Referrer-Policy': header('`no-referrer`.'),
        },
      },
      ...problemResponses(403, 404),
    },
  });
}

/**
 * The raw path after the prefix, exactly as requested: no percent-decoding, so an encoded slash or
 * dot can never turn into a storage path. Anything outside the prefix yields `''`, which no
 * storage path matches.
 */
function requestedStoragePath(url: URL, routePrefix: string): string {
  return url.pathname.startsWith(routePrefix) ? url.pathname.slice(routePrefix.length) : '';
}

/**
 * Under Node's HTTP server the file is piped straight into the response: no web stream between
 * the disk and the socket (what a plain `node:http` file server does). The outcome is reported
 * once the response settles: every byte handed to the socket (200), or the client gone first
 * (499, with the bytes read for it until then).
 */
function sendDirectly(
  outgoing: ServerResponse,
  headers: Record<string, string>,
  body: Readable,
  done: ((status: number, bytes: number) => void) | undefined,
): void {
  let bytes = 0;
  if (done) {
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    outgoing.once('close', () => done(outgoing.writableFinished ? 200 : CLIENT_CLOSED, bytes));
  }
  outgoing.writeHead(200, headers);
  pipeline(body, outgoing).catch(() => undefined);
}

/**
 * Outside Node's HTTP server (`app.request()`): passes a download's bytes through, counting them, and reports once how it ended: every byte
 * handed on (200) or the client gone first (499, the bytes handed on until then).
 */
function countedBody(body: Readable, done: (status: number, bytes: number) => void): Readable {
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  counter.once('close', () => done(counter.readableEnded ? 200 : CLIENT_CLOSED, bytes));
  pipeline(body, counter).catch(() => undefined);
  return counter;
}

/**
 * `GET <routePrefix><storage path>`: the service's own signed, short-lived download URLs. Under
 * `fs` storage it serves every object; under `s3` only published artifacts, answered with a
 * redirect (302, `Cache-Control: no-store`) to a presigned URL living at most 60 s. Verification,
 * including the refusal of anything that is not a storage path, happens first, so every bad link
 * gets the same 403. With `artifacts` set, an artifact is admitted by the registry on every
 * request (revoked answers exactly like deleted: 404) and each download is recorded once it
 * ends, off the response path. The check happens when a request arrives: a download already
 * streaming when its file is revoked runs to its end. HEAD answers the headers and records
 * nothing.
 */
export function registerFileRoutes(
  app: OpenAPIHono<AppEnv>,
  localDownloads: LocalDownloads,
  artifacts?: ArtifactDownloadGuard,
): void {
  const { routePrefix } = localDownloads;
  app.openAPIRegistry.registerPath(downloadRoute(routePrefix));

  app.get(`${routePrefix}*`, async (c) => {
    const url = new URL(c.req.url);
    const storagePath = requestedStoragePath(url, routePrefix);
    const link = localDownloads.verify(storagePath, url.searchParams);
    const kind = storagePath.startsWith(ARTIFACT_PREFIX) ? 'artifact' : 'upload';
    if (!localDownloads.kinds.includes(kind)) throw new ServiceError('NOT_FOUND', 'The file no longer exists.');
    const isHead = c.req.method === 'HEAD';
    const outcome =
      kind === 'artifact' && artifacts
        ? await artifacts.admit(storagePath, {
            peerAddress: c.env?.incoming?.socket.remoteAddress,
            forwardedFor: c.req.header('X-Forwarded-For'),
            userAgent: c.req.header('User-Agent'),
            recorded: !isHead,
          })
        : undefined;
    const delivery = await localDownloads.deliver(storagePath, link);
    if (delivery.kind === 'redirect') {
      outcome?.(302, null);
      return c.body(null, 302, { ...REDIRECT_HEADERS, Location: delivery.location });
    }
    const headers = {
      ...DOWNLOAD_HEADERS,
      'Content-Type': link.mediaType,
      'Content-Length': String(delivery.size),
      'Content-Disposition': attachmentDisposition(link.filename),
    };
    if (isHead) {
      delivery.body.destroy();
      return c.body(null, 200, headers);
    }
    const outgoing = c.env?.outgoing;
    if (outgoing) {
      sendDirectly(outgoing, headers, delivery.body, outcome);
      return RESPONSE_ALREADY_SENT;
    }
    const body = outcome ? countedBody(delivery.body, outcome) : delivery.body;
    return c.body(Readable.toWeb(body), 200, headers);
  });
}
