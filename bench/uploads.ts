import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'undici';
import { loadConfig } from '../src/config.js';
import { createStorage } from '../src/storage/create-storage.js';
import { type BenchServer, median, startBenchServer } from './support.js';

const MiB = 1024 * 1024;
const ADMIN_TOKEN = 'bench-admin-token-0123456789';

/** A structurally valid PDF of exactly `size` bytes. */
function pdf(size: number): Uint8Array {
  const bytes = new Uint8Array(size).fill(0x41);
  bytes.set(new TextEncoder().encode('%PDF-1.4\n%'), 0);
  const tail = new TextEncoder().encode('\n%%EOF\n');
  bytes.set(tail, size - tail.length);
  return bytes;
}

/** Resident set size and its high-water mark (KiB) of a process, from /proc. */
async function memory(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

async function json(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  const response = await request(url, {
    method: method as 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return response.body.json() as Promise<Record<string, string>>;
}

/** A tenant, an agent with managed sandboxes published, and a key — through the admin API. */
async function provision(base: string): Promise<string> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const tenant = await json(`${base}/v1/admin/tenants`, 'POST', admin, { name: 'bench' });
  const agent = await json(`${base}/v1/admin/tenants/${tenant.id}/agents`, 'POST', admin, { name: 'bench' });
  await json(`${base}/v1/admin/agents/${agent.id}/config`, 'PUT', admin, {
    schemaVersion: 1,
    runtime: { sandbox: { enabled: true } },
  });
  await json(`${base}/v1/admin/agents/${agent.id}/config/publish`, 'POST', admin);
  return (await json(`${base}/v1/admin/agents/${agent.id}/keys`, 'POST', admin, { permissions: ['read', 'write'] }))
    .key as string;
}

async function timeUploads(
  server: BenchServer,
  send: () => Promise<number>,
  rounds: number,
): Promise<{ medianMs: number; peakGrowthMiB: number }> {
  await send(); // warm up: JIT, first-use allocations, connection
  const pid = server.child.pid as number;
  // Start the high-water mark afresh, so the peak is the measured rounds' own.
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => undefined);
  const before = await memory(pid);
  const durations: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const started = performance.now();
    const status = await send();
    durations.push(performance.now() - started);
    if (status !== 201) throw new Error(`upload answered ${status}`);
  }
  const after = await memory(pid);
  return { medianMs: median(durations), peakGrowthMiB: (after.peak - before.rss) / 1024 };
}

/**
 * A 10 MiB upload through `POST /v1/uploads` (multipart parsing, hashing, content inspection,
 * durable fs storage, provenance row) against a raw `node:http` server piping the same body to a
 * file; then signing: `POST /v1/uploads/resign` for one path and for 50, against signing URLs
 * in-process. Targets: upload ≤ 1.5× the raw time, peak RSS growth ≤ 20 MiB.
 */
export async function benchUploads(options: { rounds?: number } = {}) {
  const rounds = options.rounds ?? 15;
  const file = pdf(10 * MiB);
  const raw = await startBenchServer('raw-http');
  const mordn = await startBenchServer('mordn', { MORDN_ADMIN_TOKEN: ADMIN_TOKEN, MORDN_SANDBOX_ENABLED: 'true' });
  try {
    const base = `http://127.0.0.1:${mordn.port}`;
    const key = await provision(base);
    const agentHeaders = { authorization: `Bearer ${key}`, 'x-chat-user': 'bench-user' };

    const rawResult = await timeUploads(
      raw,
      async () => {
        const form = new FormData();
        form.set('file', new Blob([file], { type: 'application/pdf' }), 'report.pdf');
        const response = await fetch(`http://127.0.0.1:${raw.port}/upload`, { method: 'POST', body: form });
        await response.arrayBuffer();
        return response.status;
      },
      rounds,
    );
    const storagePaths: string[] = [];
    const mordnResult = await timeUploads(
      mordn,
      async () => {
        const form = new FormData();
        form.set('file', new Blob([file], { type: 'application/pdf' }), 'report.pdf');
        const response = await fetch(`${base}/v1/uploads`, { method: 'POST', headers: agentHeaders, body: form });
        const body = (await response.json()) as { storagePath: string };
        storagePaths.push(body.storagePath);
        return response.status;
      },
      rounds,
    );

    console.log(`\n10 MiB upload: median of ${rounds} sequential uploads after one warm-up`);
    console.table([
      {
        target: 'raw node:http → file',
        'median ms': rawResult.medianMs.toFixed(1),
        'peak RSS growth MiB': rawResult.peakGrowthMiB.toFixed(1),
      },
      {
        target: 'mordn POST /v1/uploads',
        'median ms': mordnResult.medianMs.toFixed(1),
        'peak RSS growth MiB': mordnResult.peakGrowthMiB.toFixed(1),
      },
    ]);
    const timeRatio = mordnResult.medianMs / rawResult.medianMs;
    console.log(
      `time ratio mordn/raw: ${timeRatio.toFixed(3)}× (target ≤ 1.5×) ${timeRatio <= 1.5 ? 'MET' : 'NOT MET'}`,
    );
    console.log(
      `peak RSS growth: ${mordnResult.peakGrowthMiB.toFixed(1)} MiB (target ≤ 20 MiB) ${mordnResult.peakGrowthMiB <= 20 ? 'MET' : 'NOT MET'}`,
    );

    // Signing.
    const resign = async (body: unknown) => {
      const started = performance.now();
      const response = await request(`${base}/v1/uploads/resign`, {
        method: 'POST',
        headers: { ...agentHeaders, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await response.body.arrayBuffer();
      if (response.statusCode !== 200) throw new Error(`resign answered ${response.statusCode}`);
      return performance.now() - started;
    };
    const fifty = Array.from({ length: 50 }, (_, index) => storagePaths[index % storagePaths.length] as string);
    const samples = 200;
    const single: number[] = [];
    const batch: number[] = [];
    for (let index = 0; index < 20; index += 1) {
      await resign({ storagePath: storagePaths[0] });
      await resign({ storagePaths: fifty });
    }
    for (let index = 0; index < samples; index += 1) {
      single.push(await resign({ storagePath: storagePaths[index % storagePaths.length] }));
      batch.push(await resign({ storagePaths: fifty }));
    }
    const { storage } = await createStorage(
      loadConfig({ MORDN_DATA_DIR: '/tmp/mordn-bench-signing', MORDN_SIGNING_SECRET: 'x'.repeat(32) }),
    );
    const bare: number[] = [];
    for (let index = 0; index < 2_000; index += 1) {
      const started = performance.now();
      await storage.signDownloadUrl(storagePaths[0] as string, {
        filename: 'report.pdf',
        mediaType: 'application/pdf',
      });
      bare.push(performance.now() - started);
    }
    const bareUs = median(bare) * 1000;
    console.log(
      `\nSigning: median of ${samples} sequential requests (HTTP on loopback, key check, registry lookup, signing)`,
    );
    console.table([
      {
        target: 'bare signDownloadUrl (in-process)',
        'median µs per request': bareUs.toFixed(1),
        'µs per URL': bareUs.toFixed(1),
      },
      {
        target: 'POST /v1/uploads/resign, 1 path',
        'median µs per request': (median(single) * 1000).toFixed(0),
        'µs per URL': (median(single) * 1000).toFixed(0),
      },
      {
        target: 'POST /v1/uploads/resign, 50 paths',
        'median µs per request': (median(batch) * 1000).toFixed(0),
        'µs per URL': ((median(batch) * 1000) / 50).toFixed(1),
      },
    ]);
    console.log(
      `per-URL cost, batch of 50 vs bare signing: ${((median(batch) * 1000) / 50 / bareUs).toFixed(2)}×; single request vs bare: ${((median(single) * 1000) / bareUs).toFixed(1)}×`,
    );
    return { timeRatio, peakGrowthMiB: mordnResult.peakGrowthMiB };
  } finally {
    await raw.stop();
    await mordn.stop();
  }
}
