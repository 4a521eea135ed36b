import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApp, type MordnApp } from '../src/app.js';
import { composeDependencies } from '../src/compose.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/server.js';
import { resignFile } from '../src/uploads/file-links.js';
import { createAgentFixture } from '../test/support/fixtures.js';
import { s3CredentialsEnvironment, s3StorageEnvironment, startS3Server } from '../test/support/s3-server.js';
import { storeArtifact } from '../test/support/stored-artifact.js';
import { median, quantile } from './support.js';

const MiB = 1024 * 1024;
const DOWNLOAD_BYTES = 10 * MiB;
const WARM_UP = 5;
const ROUNDS = 50;
const OWNER_USER = 'bench-user';

/** A service on 127.0.0.1 with its dependencies in this process, and one artifact of `bytes`. */
async function serviceWithArtifact(environment: Record<string, string>, bytes: Buffer) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-bench-artifacts-'));
  let app: MordnApp | undefined;
  const server = await startServer({
    fetch: (request, env) => (app as MordnApp).fetch(request, env),
    host: '127.0.0.1',
    port: 0,
  });
  const config = loadConfig({ MORDN_DATA_DIR: dataDir, MORDN_PUBLIC_URL: server.url, PORT: '0', ...environment });
  const deps = await composeDependencies(config, {
    logger: createLogger({ level: 'warn', secrets: [] }),
  });
  app = createApp(deps);
  const fixture = await createAgentFixture(deps.database.db);
  const owner = { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: OWNER_USER };
  const { storagePath } = await storeArtifact({ deps, database: deps.database }, owner, bytes, {
    filename: 'bench.bin',
    mediaType: 'text/plain',
  });
  const { url } = await resignFile(
    { db: deps.database.db, storage: deps.storage, logger: deps.logger },
    owner,
    storagePath,
  );
  return {
    deps,
    url,
    async close() {
      await server.close(1000);
      await deps.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Milliseconds to download `url` whole (its bytes counted against `expected`). */
async function downloadMs(url: string, expected: number): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  let received = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
  if (response.status !== 200 || received !== expected) {
    throw new Error(`${url} answered ${response.status} with ${received} bytes, not ${expected}`);
  }
  return performance.now() - started;
}

/** Milliseconds to the first body byte of `url` (then read to the end). */
async function firstByteMs(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  const elapsed = performance.now() - started;
  if (response.status !== 200 || first.done) throw new Error(`${url} answered ${response.status} with no body`);
  while (!(await reader.read()).done) {}
  return elapsed;
}

/** Median and interquartile range of one measurement's samples, in milliseconds. */
interface Timing {
  median: number;
  p25: number;
  p75: number;
}

/**
 * Runs each measurement `WARM_UP` times, then `ROUNDS` times interleaved, the order reversed every
 * other round so that neither side always runs right after the other (whose deferred work, an
 * audit write or a collection of its garbage, would otherwise always land on the same side).
 */
async function interleaved(measures: Record<string, () => Promise<number>>): Promise<Record<string, Timing>> {
  const entries = Object.entries(measures);
  for (let round = 0; round < WARM_UP; round += 1) {
    for (const [, measure] of round % 2 ? [...entries].reverse() : entries) await measure();
  }
  const samples = Object.fromEntries(entries.map(([name]) => [name, [] as number[]]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, measure] of round % 2 ? [...entries].reverse() : entries) samples[name]?.push(await measure());
  }
  return Object.fromEntries(
    Object.entries(samples).map(([name, values]) => [
      name,
      { median: median(values), p25: quantile(values, 0.25), p75: quantile(values, 0.75) },
    ]),
  );
}

const spread = (timing: Timing, digits: number) => `${timing.p25.toFixed(digits)}–${timing.p75.toFixed(digits)}`;

/** A plain `node:http` server sending one file, the baseline of a download. */
async function rawFileServer(file: string, size: number) {
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) });
    createReadStream(file).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * `npm run bench -- artifacts`: a 10 MiB published file downloaded through the service (fs
 * storage: signature, registry check, streaming, and its audit record written after) against
 * the same bytes from a plain `node:http` file server, interleaved in one run (target ≥ 0.9× the
 * raw throughput); then, on S3 (the SigV4 test server), the time to first byte through the
 * service's revocable redirect against the presigned URL it redirects to.
 */
export async function benchArtifacts(): Promise<void> {
  const bytes = randomBytes(DOWNLOAD_BYTES);
  const fs = await serviceWithArtifact({}, bytes);
  const rawDirectory = await mkdtemp(path.join(tmpdir(), 'mordn-bench-raw-'));
  const rawFile = path.join(rawDirectory, 'raw.bin');
  await writeFile(rawFile, bytes);
  const raw = await rawFileServer(rawFile, bytes.length);
  try {
    const times = await interleaved({
      service: () => downloadMs(fs.url, bytes.length),
      raw: () => downloadMs(raw.url, bytes.length),
    });
    // Audit rows are written once each response settles; give the last ones a moment.
    await sleep(500);
    const audit = await fs.deps.database.db.selectFrom('artifact_downloads').select(['status', 'bytes']).execute();
    const complete = audit.filter((row) => row.status === 200 && Number(row.bytes) === bytes.length).length;
    const throughput = (ms: number) => bytes.length / MiB / (ms / 1000);
    const service = times.service as Timing;
    const rawTiming = times.raw as Timing;
    console.log(
      '\nArtifact download, 10 MiB, fs storage (%d warm-up rounds, then the median of %d interleaved rounds, each side as often first)',
      WARM_UP,
      ROUNDS,
    );
    console.table([
      {
        target: 'through the service (registry check + audit)',
        'ms (median)': service.median.toFixed(1),
        'ms (p25–p75)': spread(service, 1),
        'MiB/s': throughput(service.median).toFixed(0),
      },
      {
        target: 'raw node:http file serving',
        'ms (median)': rawTiming.median.toFixed(1),
        'ms (p25–p75)': spread(rawTiming, 1),
        'MiB/s': throughput(rawTiming.median).toFixed(0),
      },
    ]);
    const ratio = rawTiming.median / service.median;
    console.log(
      `  service/raw throughput: ${ratio.toFixed(3)}× (target ≥ 0.9×) ${ratio >= 0.9 ? 'MET' : 'NOT MET'}; audit rows: ${complete} complete of ${audit.length} (${WARM_UP + ROUNDS} downloads)`,
    );
  } finally {
    await raw.close();
    await fs.close();
    await rm(rawDirectory, { recursive: true, force: true });
  }

  const s3 = await startS3Server();
  // The S3 client reads its credentials from the process environment, as in production.
  Object.assign(process.env, s3CredentialsEnvironment(s3));
  const s3Service = await serviceWithArtifact(s3StorageEnvironment(s3), randomBytes(64 * 1024));
  try {
    const redirect = await fetch(s3Service.url, { redirect: 'manual' });
    const presigned = redirect.headers.get('location');
    if (redirect.status !== 302 || !presigned) throw new Error(`the service answered ${redirect.status}, not 302`);
    const times = await interleaved({
      redirect: () => firstByteMs(s3Service.url),
      direct: () => firstByteMs(presigned),
    });
    const redirectTiming = times.redirect as Timing;
    const direct = times.direct as Timing;
    console.log('\nTime to first byte, 64 KiB artifact on S3 (median of %d interleaved rounds)', ROUNDS);
    console.table([
      {
        target: 'service URL (registry check, audit, 302)',
        'ms (median)': redirectTiming.median.toFixed(2),
        'ms (p25–p75)': spread(redirectTiming, 2),
      },
      {
        target: 'the presigned URL directly',
        'ms (median)': direct.median.toFixed(2),
        'ms (p25–p75)': spread(direct, 2),
      },
    ]);
    console.log(`  added by the revocable redirect: ${(redirectTiming.median - direct.median).toFixed(2)} ms`);
  } finally {
    await s3Service.close();
    await s3.close();
  }
}
