import { Readable } from 'node:stream';
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
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
    summary: 'Download a stored file through a signed URL (local-disk storage only).',
    description:
      'The URL comes from the service (uploads, chat history, published artifacts) and works until it expires. ' +
      'Tampered, expired and malformed links are all 403 `INVALID_SIGNATURE`; a deleted file is 404 `NOT_FOUND`.',
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
 * `GET <routePrefix><storage path>`: serves `fs` storage downloads behind HMAC-signed, short-lived
 * URLs. Only local-disk storage registers it (S3 URLs go to the bucket). Verification, including
 * the refusal of anything that is not a storage path, happens in `localDownloads.open`, so every
 * bad link gets the same 403. HEAD answers the headers and closes the file unread.
 */
export function registerFileRoutes(app: OpenAPIHono<AppEnv>, localDownloads: LocalDownloads): void {
  const { routePrefix } = localDownloads;
  app.openAPIRegistry.registerPath(downloadRoute(routePrefix));

  app.get(`${routePrefix}*`, async (c) => {
    const url = new URL(c.req.url);
    const download = await localDownloads.open(requestedStoragePath(url, routePrefix), url.searchParams);
    const headers = {
      ...DOWNLOAD_HEADERS,
      'Content-Type': download.mediaType,
      'Content-Length': String(download.size),
      'Content-Disposition': attachmentDisposition(download.filename),
    };
    if (c.req.method === 'HEAD') {
      download.body.destroy();
      return c.body(null, 200, headers);
    }
    return c.body(Readable.toWeb(download.body), 200, headers);
  });
}
