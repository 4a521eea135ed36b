import type { MiddlewareHandler } from 'hono';
import { ServiceError } from '../errors.js';
import type { AppEnv } from './app-env.js';
import { type BodyLimits, readBodyWithLimit } from './request-body.js';

const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

/**
 * For JSON routes: a body, when present, must be `application/json` (415 otherwise), at most
 * `limits.maxBytes` long (413 naming the limit, for chunked bodies too) and arrive without
 * stalling for `limits.idleTimeoutMs` (408). The bounded body is handed to Hono's body cache, so
 * validators parse it without touching the stream again.
 *
 * @example
 * app.post('/v1/things', jsonBody({ maxBytes: 64 * 1024, idleTimeoutMs: config.requestIdleTimeoutMs }), handler);
 */
export function jsonBody(limits: BodyLimits): MiddlewareHandler<AppEnv> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  return async (c, next) => {
    const headers = c.req.raw.headers;
    const hasBody = headers.has('transfer-encoding') || Number(headers.get('content-length') ?? '0') > 0;
    if (!hasBody) return next();
    const mediaType = (headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    if (!JSON_MEDIA_TYPE.test(mediaType)) {
      throw new ServiceError(
        'UNSUPPORTED_MEDIA_TYPE',
        `This route accepts application/json bodies (got ${mediaType === '' ? 'no Content-Type' : mediaType}).`,
      );
    }
    const body = await readBodyWithLimit(c.req.raw, limits);
    // Hono keeps body promises in this cache (its type says otherwise); validators read from it.
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(decoder.decode(body));
    return next();
  };
}
