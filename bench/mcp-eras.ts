import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { type EraRequest, LEGACY_ERA, MODERN_ERA } from '../test/support/mcp-eras.js';
import {
  ADMIN_TOKEN,
  median,
  pinThisProcess,
  processCpuSeconds,
  provisionAgent,
  quantile,
  startBenchServer,
} from './support.js';

/** Users the load goes round, so the per-user sandbox call limit (10,000 a minute at most) is never reached. */
const USERS = Array.from({ length: 100 }, (_, index) => `eras-user-${index}`);
/** A resign request for an upload that does not exist: authenticated, parsed, looked up, 404. */
const RESIGN_BODY = { storagePath: 'uploads/00000000000000000000000000000000' };
const NO_OP_ARGUMENTS = { command: 'true' };

interface Target {
  label: string;
  path: string;
  body: string;
  /** Headers besides authentication and the user. */
  headers: Record<string, string>;
  /** Whether a response is the expected answer (checked on every response). */
  expected(status: number, body: string): boolean;
}

interface RoundResult {
  requests: number;
  errors: number;
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Service CPU (user + system) per request over the round. */
  serverCpuUsPerRequest: number;
}

type JsonRpcAnswer = { id?: unknown; result?: { isError?: boolean; resultType?: string; _meta?: object } };

function parse(body: string): JsonRpcAnswer | undefined {
  try {
    return JSON.parse(body) as JsonRpcAnswer;
  } catch {
    return undefined;
  }
}

/** A tools/call target of one era: answered 200 with the gate's tool error result (and, modern, its envelope). */
function mcpTarget(label: string, era: EraRequest, modern: boolean): Target {
  return {
    label,
    path: '/v1/sandbox/mcp',
    body: JSON.stringify(era.body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...era.headers },
    expected: (status, body) => {
      const result = parse(body)?.result;
      if (status !== 200 || result?.isError !== true) return false;
      const envelope = result.resultType === 'complete' && result._meta !== undefined;
      return modern ? envelope : result.resultType === undefined;
    },
  };
}

function targets(): Target[] {
  return [
    mcpTarget('modern tools/call (2026-07-28)', MODERN_ERA.call('sandbox_exec', NO_OP_ARGUMENTS), true),
    mcpTarget('legacy tools/call (no initialize)', LEGACY_ERA.call('sandbox_exec', NO_OP_ARGUMENTS), false),
    {
      label: 'plain JSON POST /v1/uploads/resign',
      path: '/v1/uploads/resign',
      body: JSON.stringify(RESIGN_BODY),
      headers: { 'content-type': 'application/json' },
      expected: (status) => status === 404,
    },
  ];
}

/**
 * Sends `target` from `connections` keep-alive workers for `seconds`, each request as the next
 * user of the pool, timing every request and the service's CPU over the span.
 */
async function loadRound(
  base: string,
  key: string,
  servicePid: number,
  target: Target,
  options: { seconds: number; connections: number; dispatcher: Agent },
): Promise<RoundResult> {
  const headersByUser = USERS.map((user) => ({
    ...target.headers,
    authorization: `Bearer ${key}`,
    'x-chat-user': user,
  }));
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const cpuBefore = await processCpuSeconds(servicePid);
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const headers = headersByUser[next % USERS.length] as Record<string, string>;
      next += 1;
      const sent = performance.now();
      const response = await request(`${base}${target.path}`, {
        method: 'POST',
        dispatcher: options.dispatcher,
        headers,
        body: target.body,
      });
      const body = await response.body.text();
      latencies.push(performance.now() - sent);
      if (!target.expected(response.statusCode, body)) errors += 1;
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = (await processCpuSeconds(servicePid)) - cpuBefore;
  return {
    requests: latencies.length,
    errors,
    requestsPerSecond: latencies.length / elapsed,
    latencyP50Ms: median(latencies),
    latencyP99Ms: quantile(latencies, 0.99),
    serverCpuUsPerRequest: (cpu / latencies.length) * 1e6,
  };
}

/**
 * The exact bytes of one exchange on the wire (one request on its own connection, closed after
 * it): request head and body, response head and body, and the response's status.
 */
function wireBytes(port: number, key: string, target: Target) {
  const headers = { ...target.headers, authorization: `Bearer ${key}`, 'x-chat-user': USERS[0] as string };
  const head = [
    `POST ${target.path} HTTP/1.1`,
    `host: 127.0.0.1:${port}`,
    'connection: close',
    `content-length: ${Buffer.byteLength(target.body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join('\r\n');
  const sent = `${head}\r\n\r\n${target.body}`;
  return new Promise<{ requestHead: number; requestBody: number; responseHead: number; responseBody: number }>(
    (resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = connect(port, '127.0.0.1', () => socket.end(sent));
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        const received = Buffer.concat(chunks);
        const split = received.indexOf('\r\n\r\n') + 4;
        resolve({
          requestHead: Buffer.byteLength(head) + 4,
          requestBody: Buffer.byteLength(target.body),
          responseHead: split,
          responseBody: received.length - split,
        });
      });
    },
  );
}

interface PairedRatios {
  /** Median over rounds of a's time per request over b's (b's req/s over a's) in the same round. */
  time: number;
  timeRange: string;
  /** Median over rounds of a's service CPU per request over b's. */
  cpu: number;
  cpuRange: string;
}

/**
 * Ratios of `a` to `b` taken round by round (each pair measured back to back, so drift on the
 * machine cancels out of each ratio), then their median and range.
 */
function pairedRatios(a: RoundResult[], b: RoundResult[]): PairedRatios {
  const time = a.map((run, index) => (b[index] as RoundResult).requestsPerSecond / run.requestsPerSecond);
  const cpu = a.map((run, index) => run.serverCpuUsPerRequest / (b[index] as RoundResult).serverCpuUsPerRequest);
  const range = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
  return { time: median(time), timeRange: range(time), cpu: median(cpu), cpuRange: range(cpu) };
}

/**
 * `npm run bench -- mcp-eras`: a no-op `tools/call` of the stateless 2026-07-28 revision against
 * the same call of the legacy era (no `initialize` first: the endpoint is stateless) and a plain
 * JSON POST through the same stack and auth (`/v1/uploads/resign` for a missing upload, 404), on
 * one service instance. "No-op": the agent's published config has sandboxes off, so the gate
 * refuses after the full check (auth, rate limit, config, gate) with a 200 tool error result and
 * no sandbox process runs: only the MCP path is measured. Keep-alive workers on core 1, the
 * service on core 0; warm-up, then rounds interleaved A,B,C,A,B,C… so drift hits all three alike.
 * Ratios are taken round by round, then their median. Targets, as time-per-request ratios:
 * modern ≤ legacy, both ≤ 2× plain.
 */
export async function benchMcpEras(options: { rounds?: number; seconds?: number; connections?: number } = {}) {
  const rounds = options.rounds ?? 10;
  const seconds = options.seconds ?? 2;
  const connections = options.connections ?? 16;
  const pinned = pinThisProcess(1);
  const server = await startBenchServer('mordn', {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
  });
  const dispatcher = new Agent({ connections });
  const list = targets();
  const results = new Map<Target, RoundResult[]>(list.map((target) => [target, []]));
  const servicePid = server.child.pid as number;
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const key = await provisionAgent(base, false);
    const bytes = await Promise.all(list.map((target) => wireBytes(server.port, key, target)));
    for (const target of list) {
      const warm = await loadRound(base, key, servicePid, target, { seconds: 2, connections, dispatcher });
      if (warm.errors > 0) throw new Error(`${target.label}: ${warm.errors} unexpected answers in warm-up`);
    }
    for (let round = 0; round < rounds; round += 1) {
      for (const target of list) {
        results.get(target)?.push(await loadRound(base, key, servicePid, target, { seconds, connections, dispatcher }));
      }
    }
    const rows = list.map((target, index) => {
      const runs = results.get(target) ?? [];
      const perSecond = runs.map((run) => run.requestsPerSecond);
      const wire = bytes[index] as Awaited<ReturnType<typeof wireBytes>>;
      return {
        target: target.label,
        'req/s (median)': Math.round(median(perSecond)),
        'req/s range': `${Math.round(Math.min(...perSecond))}–${Math.round(Math.max(...perSecond))}`,
        'p50 ms': Number(median(runs.map((run) => run.latencyP50Ms)).toFixed(2)),
        'p99 ms': Number(median(runs.map((run) => run.latencyP99Ms)).toFixed(2)),
        'service CPU µs/req': Math.round(median(runs.map((run) => run.serverCpuUsPerRequest))),
        'request bytes (head+body)': `${wire.requestHead}+${wire.requestBody}`,
        'response bytes (head+body)': `${wire.responseHead}+${wire.responseBody}`,
        requests: runs.reduce((sum, run) => sum + run.requests, 0),
        errors: runs.reduce((sum, run) => sum + run.errors, 0),
      };
    });
    console.log(
      `\nMCP eras: no-op tools/call (gate refuses: sandboxes off in the published config), ${rounds} interleaved rounds of ${seconds}s, ${connections} keep-alive connections (undici; client ${pinned ? 'on core 1, service on core 0' : 'unpinned'})`,
    );
    console.table(rows);
    const [modern, legacy, plain] = list.map((target) => results.get(target) ?? []) as [
      RoundResult[],
      RoundResult[],
      RoundResult[],
    ];
    const figures = {
      modernOverLegacy: pairedRatios(modern, legacy),
      modernOverPlain: pairedRatios(modern, plain),
      legacyOverPlain: pairedRatios(legacy, plain),
    };
    const line = (name: string, paired: PairedRatios, limit: number) =>
      `  ${name} time ${paired.time.toFixed(3)}× (rounds ${paired.timeRange}; target ≤ ${limit}×) ${paired.time <= limit ? 'MET' : 'NOT MET'}; service CPU ${paired.cpu.toFixed(3)}× (rounds ${paired.cpuRange})`;
    console.log('time per request (1 / req/s) and service CPU per request, median of the per-round ratios:');
    console.log(line('modern/legacy:', figures.modernOverLegacy, 1));
    console.log(line('modern/plain: ', figures.modernOverPlain, 2));
    console.log(line('legacy/plain: ', figures.legacyOverPlain, 2));
    return figures;
  } finally {
    await dispatcher.close();
    await server.stop();
  }
}
