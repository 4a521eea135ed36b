import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentDisposition } from '../src/storage/content-disposition.js';
import { createStoragePath } from '../src/storage/storage-path.js';
import { rawRequest } from './support/http.js';
import { type Json, readJson } from './support/json.js';
import { chunkedStream, type FsStorageService, startFsStorageService } from './support/storage-contract.js';

const TTL_SECONDS = 300;
let service: FsStorageService;
let clockOffsetMs = 0;

beforeAll(async () => {
  service = await startFsStorageService({ urlTtlSeconds: TTL_SECONDS, now: () => Date.now() + clockOffsetMs });
});
afterAll(() => service.close());

async function storeFile(bytes: Buffer): Promise<string> {
  const key = createStoragePath('artifact');
  await service.storage.put(key, chunkedStream(bytes), { contentType: 'application/octet-stream', size: bytes.length });
  return key;
}

/** The path and query of a URL, to send over node:http exactly as written. */
function pathOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

async function expectProblem(response: Response, status: number, code: string): Promise<Json> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const problem = await readJson(response);
  expect(problem).toMatchObject({ status, code });
  expect(JSON.stringify(problem)).not.toContain(service.signingSecret);
  return problem;
}

describe('GET /v1/files/…', () => {
  const bytes = Buffer.from('name,amount\nrent,1200\n');
  let key: string;
  let url: string;

  beforeAll(async () => {
    key = await storeFile(bytes);
    url = await service.storage.signDownloadUrl(key, { filename: 'Ünïcode "report".csv', mediaType: 'text/csv' });
  });

  it('serves the bytes with the download headers', async () => {
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'content-type': 'text/csv',
      'content-length': String(bytes.length),
      'content-disposition': attachmentDisposition('Ünïcode "report".csv'),
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-store',
      'content-security-policy': "default-src 'none'; sandbox",
      'cross-origin-resource-policy': 'cross-origin',
      'referrer-policy': 'no-referrer',
    });
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="Unicode _report_.csv"; filename*=UTF-8''%C3%9Cn%C3%AFcode%20%22report%22.csv`,
    );
    expect(response.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers HEAD with the headers, no body, and closes the file', async () => {
    const openFiles = () => (existsSync('/proc/self/fd') ? readdirSync('/proc/self/fd').length : 0);
    const before = openFiles();
    for (let attempt = 0; attempt < 25; attempt += 1) {
      const response = await rawRequest(url, { method: 'HEAD' });
      expect(response.status).toBe(200);
      expect(response.body).toBe('');
      expect(response.headers['content-type']).toBe('text/csv');
      expect(response.headers['content-length']).toBe(String(bytes.length));
      expect(response.headers['x-content-type-options']).toBe('nosniff');
    }
    // Linux shows a process's open files; elsewhere the headers are still checked.
    if (existsSync('/proc/self/fd')) expect(openFiles() - before).toBeLessThan(10);
  });

  it('signs a file name with an unpaired surrogate as it will arrive', async () => {
    const lone = await service.storage.signDownloadUrl(key, { filename: 'a\uD800b.txt', mediaType: 'text/plain' });
    const response = await fetch(lone);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toContain("filename*=UTF-8''a%EF%BF%BDb.txt");
  });

  it.each([
    ['an encoded slash', (path: string) => path.replace(/^(\/v1\/files\/\w+)\//, '$1%2F')],
    [
      'an encoded hex digit',
      (path: string) =>
        path.replace(
          /\/(uploads|artifacts)\/([0-9a-f])/,
          (_match, kind: string, digit: string) => `/${kind}/%${digit.charCodeAt(0).toString(16)}`,
        ),
    ],
    ['an encoded route prefix', (path: string) => path.replace('/v1/files/', '/v1/%66iles/')],
    ['uppercase hex', (path: string) => path.replace(/[0-9a-f]{32}/, (hex) => hex.toUpperCase())],
    ['an extra segment', (path: string) => path.replace('?', '/x?')],
    ['a traversal', (path: string) => path.replace('/v1/files/', '/v1/files/uploads/..%2F..%2F')],
    ['no storage path at all', (path: string) => path.replace(/\/v1\/files\/[^?]*/, '/v1/files/')],
  ])('refuses a path with %s, even with a valid signature (403 problem)', async (_case, change) => {
    const path = change(pathOf(url));
    expect(path).not.toBe(pathOf(url));
    const response = await rawRequest(`${service.url}${path}`);
    expect(response.status).toBe(403);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(response.body)).toMatchObject({ status: 403, code: 'INVALID_SIGNATURE' });
  });

  it.each([
    ['a repeated parameter', (query: URLSearchParams) => query.append('filename', 'evil.html')],
    [
      'a truncated signature',
      (query: URLSearchParams) => query.set('signature', (query.get('signature') ?? '').slice(0, -1)),
    ],
    ['an empty signature', (query: URLSearchParams) => query.set('signature', '')],
    ['a non-numeric expiry', (query: URLSearchParams) => query.set('expires', `${query.get('expires')}.0`)],
    [
      'no query at all',
      (query: URLSearchParams) => {
        for (const name of [...query.keys()]) query.delete(name);
      },
    ],
  ])('refuses %s (403 INVALID_SIGNATURE)', async (_case, tamper) => {
    const changed = new URL(url);
    tamper(changed.searchParams);
    await expectProblem(await fetch(changed), 403, 'INVALID_SIGNATURE');
  });

  it('refuses an expired link and a far-future one with the same problem', async () => {
    clockOffsetMs = -(TTL_SECONDS + 5) * 1000;
    const expired = await service.storage.signDownloadUrl(key, { filename: 'a.csv', mediaType: 'text/csv' });
    clockOffsetMs = 2 * 3600 * 1000;
    const farFuture = await service.storage.signDownloadUrl(key, { filename: 'a.csv', mediaType: 'text/csv' });
    clockOffsetMs = 0;
    const first = await expectProblem(await fetch(expired), 403, 'INVALID_SIGNATURE');
    const second = await expectProblem(await fetch(farFuture), 403, 'INVALID_SIGNATURE');
    expect(second.detail).toBe(first.detail);
  });

  it('answers 404 for a valid link to a deleted file', async () => {
    const doomed = await storeFile(Buffer.from('short-lived'));
    const link = await service.storage.signDownloadUrl(doomed, { filename: 'gone.txt', mediaType: 'text/plain' });
    await service.storage.delete(doomed);
    await expectProblem(await fetch(link), 404, 'NOT_FOUND');
  });

  it('never writes the signing secret to the log', () => {
    expect(service.logs.length).toBeGreaterThan(0);
    expect(service.logs.join('\n')).not.toContain(service.signingSecret);
  });

  it('is described in the OpenAPI document', () => {
    const document = service.app.getOpenAPI31Document({ openapi: '3.1.0', info: { title: 't', version: '1' } });
    const operation = document.paths?.['/v1/files/{kind}/{id}']?.get;
    expect(operation).toBeDefined();
    expect(Object.keys(operation?.responses ?? {})).toEqual(['200', '302', '403', '404']);
  });
});
