import { createHash, createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** The part of s3rver's (untyped, CommonJS) API used here. */
interface S3rverInstance {
  configureBuckets(): Promise<unknown>;
  /** The Koa request listener that answers the S3 protocol. */
  callback(): http.RequestListener;
}
type S3rverConstructor = new (options: {
  silent: boolean;
  directory: string;
  configureBuckets: Array<{ name: string }>;
}) => S3rverInstance;

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverConstructor;

export interface TestS3Server {
  /** `http://127.0.0.1:<port>`, for path-style addressing. */
  endpoint: string;
  bucket: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Where s3rver keeps buckets and objects. */
  directory: string;
  /** Requests received so far (signed or not). */
  requestCount(): number;
  /**
   * Makes every request from now on fail as `fault` says — answered with that HTTP status and an
   * S3 error body, or (`'hang'`) read and then never answered — until called with `undefined`.
   */
  inject(fault: S3Fault | undefined): void;
  close(): Promise<void>;
}

/**
 * The service environment that stores files in `s3`: the storage kind, bucket, region, endpoint
 * and path-style addressing.
 */
export function s3StorageEnvironment(s3: TestS3Server): Record<string, string> {
  return {
    MORDN_STORAGE: 's3',
    S3_BUCKET: s3.bucket,
    S3_REGION: s3.region,
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
  };
}

/**
 * The credentials of `s3` as the AWS SDK's default chain reads them from the environment (and no
 * instance-metadata lookup): for a child process's environment, or `vi.stubEnv` in this one.
 */
export function s3CredentialsEnvironment(s3: TestS3Server): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    AWS_EC2_METADATA_DISABLED: 'true',
  };
}

/** A failure the test server can play: an S3 error status, or a request left unanswered. */
export type S3Fault = 500 | 503 | 'hang';

const FAULT_CODES = { 500: 'InternalError', 503: 'ServiceUnavailable' } as const;

/** Answers as a failing S3 would: the body is read (so the client is not cut off mid-send), then the error. */
function playFault(fault: S3Fault, request: http.IncomingMessage, response: http.ServerResponse): void {
  request.resume();
  if (fault === 'hang') return;
  request.once('end', () => {
    response.writeHead(fault, { 'Content-Type': 'application/xml' });
    response.end(
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${FAULT_CODES[fault]}</Code>` +
        '<Message>Injected fault.</Message></Error>',
    );
  });
}

const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const REGION = 'us-east-1';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/** RFC 3986 encoding, as SigV4 canonical query strings use it. */
function encodeRfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function parseQuery(rawQuery: string): Array<[string, string]> {
  return rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair): [string, string] => {
      const equals = pair.indexOf('=');
      const name = equals === -1 ? pair : pair.slice(0, equals);
      const value = equals === -1 ? '' : pair.slice(equals + 1);
      return [decodeURIComponent(name), decodeURIComponent(value)];
    });
}

function canonicalQuery(pairs: Array<[string, string]>): string {
  const byCodeUnit = (left: string, right: string) => (left < right ? -1 : left > right ? 1 : 0);
  return pairs
    .map(([name, value]) => [encodeRfc3986(name), encodeRfc3986(value)] as const)
    .sort(([leftName, leftValue], [rightName, rightValue]) =>
      leftName === rightName ? byCodeUnit(leftValue, rightValue) : byCodeUnit(leftName, rightName),
    )
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function headerValue(request: http.IncomingMessage, name: string): string {
  const value = request.headers[name];
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return joined.trim().replace(/ +/g, ' ');
}

interface SignedRequest {
  credential: string;
  amzDate: string;
  signedHeaders: string;
  signature: string;
  payloadHash: string;
  query: Array<[string, string]>;
}

/** Reads the SigV4 parameters from a presigned URL or an Authorization header; none when unsigned. */
function signedRequest(request: http.IncomingMessage, pairs: Array<[string, string]>): SignedRequest | undefined {
  const query = new Map(pairs);
  if (query.has('X-Amz-Algorithm')) {
    if (query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return undefined;
    return {
      credential: query.get('X-Amz-Credential') ?? '',
      amzDate: query.get('X-Amz-Date') ?? '',
      signedHeaders: query.get('X-Amz-SignedHeaders') ?? '',
      signature: query.get('X-Amz-Signature') ?? '',
      payloadHash: query.get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD',
      query: pairs.filter(([name]) => name !== 'X-Amz-Signature'),
    };
  }
  const match = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(
    request.headers.authorization ?? '',
  );
  if (!match) return undefined;
  return {
    credential: match[1] ?? '',
    amzDate: headerValue(request, 'x-amz-date'),
    signedHeaders: match[2] ?? '',
    signature: match[3] ?? '',
    payloadHash: headerValue(request, 'x-amz-content-sha256'),
    query: pairs,
  };
}

/**
 * Recomputes an AWS Signature Version 4 from the request as received. s3rver 3.x accepts any V4
 * signature from a known access key (it only checks expiry), so without this a tampered presigned
 * URL would still download.
 */
function hasValidSignature(request: http.IncomingMessage): boolean {
  const target = request.url ?? '/';
  const queryStart = target.indexOf('?');
  const rawPath = queryStart === -1 ? target : target.slice(0, queryStart);
  let pairs: Array<[string, string]>;
  try {
    pairs = parseQuery(queryStart === -1 ? '' : target.slice(queryStart + 1));
  } catch {
    return false;
  }
  const signed = signedRequest(request, pairs);
  if (!signed) return false;
  const [accessKeyId, date, region, service, terminator] = signed.credential.split('/');
  if (
    accessKeyId !== CREDENTIALS.accessKeyId ||
    date === undefined ||
    region === undefined ||
    service === undefined ||
    terminator !== 'aws4_request' ||
    !signed.amzDate.startsWith(date)
  ) {
    return false;
  }
  const headerNames = signed.signedHeaders.split(';');
  const canonicalRequest = [
    request.method ?? 'GET',
    rawPath,
    canonicalQuery(signed.query),
    headerNames.map((name) => `${name}:${headerValue(request, name)}\n`).join(''),
    signed.signedHeaders,
    signed.payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', signed.amzDate, scope, sha256(canonicalRequest)].join('\n');
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${CREDENTIALS.secretAccessKey}`, date), region), service),
    'aws4_request',
  );
  return hmac(signingKey, stringToSign).toString('hex') === signed.signature;
}

function refuse(response: http.ServerResponse): void {
  response.writeHead(403, { 'Content-Type': 'application/xml', Connection: 'close' });
  response.end(
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>' +
      '<Message>The request signature does not match, or the request is unsigned.</Message></Error>',
  );
}

/** How long a DELETE waits for a PUT of the same key that is still being handled. */
const PUT_SETTLE_MS = 2000;

/**
 * An S3-protocol server for integration tests: s3rver in-process on 127.0.0.1 (random port,
 * silent, objects in a fresh temporary directory) with one private bucket. Path-style addressing;
 * credentials `S3RVER`/`S3RVER`. Every request must carry a valid SigV4 signature (header or
 * presigned query), checked here in front of s3rver, as a private bucket on S3 would demand.
 *
 * @example
 * const s3 = await startS3Server();
 * const client = createS3Client({ region: s3.region, endpoint: s3.endpoint, forcePathStyle: true, credentials: s3.credentials });
 */
export async function startS3Server(options: { bucket?: string } = {}): Promise<TestS3Server> {
  const bucket = options.bucket ?? 'mordn-test';
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-s3rver-'));
  const s3rver = new S3rver({ silent: true, directory, configureBuckets: [{ name: bucket }] });
  await s3rver.configureBuckets();
  const answer = s3rver.callback();
  let requests = 0;
  let fault: S3Fault | undefined;
  // S3 never applies a PUT whose body was cut short, but s3rver may still store what arrived after
  // the client gave up. A DELETE of that key therefore waits until such a PUT is fully handled,
  // so the late write lands first and the delete removes it, as it would never exist on S3.
  const writing = new Map<string, Promise<void>>();
  const server = http.createServer((request, response) => {
    requests += 1;
    if (fault !== undefined) return playFault(fault, request, response);
    if (!hasValidSignature(request)) return refuse(response);
    const target = (request.url ?? '/').split('?', 1)[0] ?? '/';
    // Koa's request handler settles once s3rver's middleware is done, stored object included.
    const handle = () =>
      Promise.resolve(answer(request, response) as unknown).then(
        () => undefined,
        () => undefined,
      );
    const pending = request.method === 'DELETE' ? writing.get(target) : undefined;
    if (pending) {
      void pending.then(handle);
      return;
    }
    const handled = handle();
    if (request.method === 'PUT') {
      // A handler left waiting on a body that never ends stores nothing: stop waiting for it.
      const settled = Promise.race([handled, delay(PUT_SETTLE_MS)]).then(() => undefined);
      writing.set(target, settled);
      void settled.then(() => {
        if (writing.get(target) === settled) writing.delete(target);
      });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region: REGION,
    credentials: { ...CREDENTIALS },
    directory,
    requestCount: () => requests,
    inject: (next) => {
      fault = next;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(directory, { recursive: true, force: true });
    },
  };
}
