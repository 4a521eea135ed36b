import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ServiceError } from '../errors.js';
import type { AppEnv } from './app-env.js';

const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * For JSON routes: a body, when present, must be `application/json` (415 otherwise) and at most
 * `maxBytes` long (413 naming the limit). The limit holds for chunked bodies too: they are counted
 * while streaming and refused as soon as they pass it.
 */
export function jsonBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ServiceError('PAYLOAD_TOO_LARGE', `The request body exceeds the ${formatBytes(maxBytes)} limit.`);
    },
  });
  return async (c, next) => {
    const headers = c.req.raw.headers;
    const hasBody = headers.has('transfer-encoding') || Number(headers.get('content-length') ?? '0') > 0;
    if (hasBody) {
      const mediaType = (headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
      if (!JSON_MEDIA_TYPE.test(mediaType)) {
        throw new ServiceError(
          'UNSUPPORTED_MEDIA_TYPE',
          `This route accepts application/json bodies (got ${mediaType === '' ? 'no Content-Type' : mediaType}).`,
        );
      }
    }
    return limit(c, next);
  };
}
