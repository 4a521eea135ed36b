import type { IncomingMessage, ServerResponse } from 'node:http';

export const LIVENESS_PATH = '/healthz';
export const LIVENESS_BODY = { status: 'ok' } as const;
const LIVENESS_JSON = JSON.stringify(LIVENESS_BODY);

/**
 * Answers `GET|HEAD /healthz` directly from the HTTP server, before routing and middleware.
 * Liveness means exactly "this process accepts and answers HTTP": it must not depend on the app
 * (auth, database, logging, metrics), and orchestrators poll it often enough that going through
 * the whole stack would only add noise to request logs and metrics. Returns whether it answered.
 */
export function answerLiveness(request: IncomingMessage, response: ServerResponse): boolean {
  if (request.url !== LIVENESS_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
  response.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(LIVENESS_JSON),
    'Cache-Control': 'no-store',
  });
  response.end(request.method === 'HEAD' ? undefined : LIVENESS_JSON);
  return true;
}
