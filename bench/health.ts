import { type LoadResult, median, runLoad, startBenchServer } from './support.js';

interface Target {
  label: string;
  server: 'raw-http' | 'mordn';
  path: string;
}

/**
 * `/healthz` throughput of the service against a raw `node:http` server answering the same body,
 * measured in the same run with the same load; rounds alternate so drift on the machine hits all
 * alike. Target: mordn/raw ≥ 0.85×.
 *
 * The served `/healthz` is answered by the HTTP server before the app (src/liveness.ts). A third
 * row sends the same route through the whole app stack (routing, request id, metrics, access log)
 * via `/healthz?via=app`, to show what a request costs there.
 */
export async function benchHealth(options: { rounds?: number; seconds?: number; connections?: number } = {}) {
  const rounds = options.rounds ?? 5;
  const seconds = options.seconds ?? 5;
  const connections = options.connections ?? 32;
  const targets: Target[] = [
    { label: 'raw node:http /healthz', server: 'raw-http', path: '/healthz' },
    { label: 'mordn /healthz', server: 'mordn', path: '/healthz' },
    { label: 'mordn app stack /healthz?via=app', server: 'mordn', path: '/healthz?via=app' },
  ];
  const servers = { 'raw-http': await startBenchServer('raw-http'), mordn: await startBenchServer('mordn') };
  const results = new Map<Target, LoadResult[]>(targets.map((target) => [target, []]));
  try {
    const url = (target: Target) => `http://127.0.0.1:${servers[target.server].port}${target.path}`;
    for (const target of targets) await runLoad(url(target), { seconds: 1, connections });
    for (let round = 0; round < rounds; round += 1) {
      for (const target of targets) results.get(target)?.push(await runLoad(url(target), { seconds, connections }));
    }
  } finally {
    await servers['raw-http'].stop();
    await servers.mordn.stop();
  }
  const rows = targets.map((target) => {
    const runs = results.get(target) ?? [];
    return {
      target: target.label,
      'req/s (median)': Math.round(median(runs.map((run) => run.requestsPerSecond))),
      'p50 ms': median(runs.map((run) => run.latencyP50Ms)),
      'p99 ms': median(runs.map((run) => run.latencyP99Ms)),
      errors: runs.reduce((sum, run) => sum + run.errors, 0),
    };
  });
  const baseline = rows[0]?.['req/s (median)'] ?? Number.NaN;
  const table = rows.map((row) => ({ ...row, 'vs raw': `${(row['req/s (median)'] / baseline).toFixed(3)}×` }));
  console.log(`\n/healthz throughput: ${rounds} alternating rounds of ${seconds}s, ${connections} connections (wrk)`);
  console.table(table);
  const ratio = (rows[1]?.['req/s (median)'] ?? 0) / baseline;
  console.log(`ratio mordn/raw: ${ratio.toFixed(3)}× (target ≥ 0.85×) ${ratio >= 0.85 ? 'MET' : 'NOT MET'}`);
  return { ratio };
}
