import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Agent, Client, type Dispatcher, request } from 'undici';
import { ADMIN_TOKEN, type BenchServer, median, provisionAgent, quantile, startBenchServer } from './support.js';

const dispatcher = new Agent({ connections: 4 });

async function timed(send: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const status = await send();
  const elapsed = performance.now() - started;
  if (status !== 200) throw new Error(`request answered ${status}`);
  return elapsed;
}

/** One `tools/call` as raw JSON-RPC, over `via` (by default the shared pool). */
export function mcpCall(
  base: string,
  key: string,
  user: string,
  name: string,
  args: Record<string, unknown>,
  expect: 'success' | 'refusal' = 'success',
  via: Dispatcher = dispatcher,
) {
  return async () => {
    const response = await request(`${base}/v1/sandbox/mcp`, {
      method: 'POST',
      dispatcher: via,
      headers: {
        authorization: `Bearer ${key}`,
        'x-chat-user': user,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });
    const body = (await response.body.json()) as { result?: { isError?: boolean } };
    if ((body.result?.isError === true) !== (expect === 'refusal')) {
      throw new Error(`unexpected tool result: ${JSON.stringify(body)}`);
    }
    return response.statusCode;
  };
}

/**
 * The floors for one exec, in a process pinned like the service's (spawning from a process that
 * shares one core with its children costs more than from an unpinned one): the same bwrap sandbox
 * (same isolation, limits and, for a root service, the same privilege drop) spawned directly from
 * Node, and a plain `child_process.spawn('true')` — no HTTP, MCP, database, workspace
 * bookkeeping or sandbox at all.
 */
async function startBaselines(): Promise<{
  bareBwrap(): Promise<number>;
  spawnTrue(): Promise<number>;
  stop(): Promise<void>;
}> {
  const server = await startBenchServer('bare-bwrap');
  const lines = createInterface({ input: server.child.stdout as Readable });
  const pending: Array<(ms: number) => void> = [];
  lines.on('line', (line) => pending.shift()?.(Number(line)));
  const ask = (command: 'run' | 'spawn') =>
    new Promise<number>((resolve) => {
      pending.push(resolve);
      server.child.stdin?.write(`${command}\n`);
    });
  return { bareBwrap: () => ask('run'), spawnTrue: () => ask('spawn'), stop: () => server.stop() };
}

async function rssKiB(server: BenchServer): Promise<number> {
  const status = await readFile(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN);
}

/**
 * Managed sandbox overheads, each against a baseline measured in the same run:
 * - warm `sandbox_exec` of `true` over MCP (raw JSON-RPC over one keep-alive connection, agent-key
 *   auth, the same warm workspace, sequential calls after 20 warm-up ones) vs a plain
 *   `child_process.spawn('true')` from Node (target ≤ 2×) and vs a bare bwrap spawn of the same
 *   sandbox from Node (target ≤ 1.0×), the three interleaved call by call so that each sees the
 *   same machine load;
 * - a no-op `tools/call` (refused by the gate: auth, rate limit, gate, MCP round trip) vs a plain
 *   JSON POST (`/v1/uploads/resign` for a missing path) (target ≤ 2×);
 * - the first call into a new workspace, creating its filesystem, cgroup and sandbox (target
 *   ≤ 40 ms p50), and what that adds to the same call when warm;
 * - RSS of the service across 10k MCP calls, spread over users so no per-user rate limit is
 *   reached (target: flat).
 */
export async function benchSandbox(options: { samples?: number; memoryCalls?: number } = {}) {
  const samples = options.samples ?? 200;
  const memoryCalls = options.memoryCalls ?? 10_000;
  const server = await startBenchServer('mordn', {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
    MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '64',
  });
  const baselines = await startBaselines();
  // The exec comparison's own connection: every call after the first reuses it.
  const execConnection = new Client(`http://127.0.0.1:${server.port}`, { pipelining: 1 });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const enabledKey = await provisionAgent(base, true);
    const disabledKey = await provisionAgent(base, false);

    // Warm exec over MCP vs a plain spawn('true') and a bare bwrap sandbox, interleaved.
    const execTrue = mcpCall(
      base,
      enabledKey,
      'bench-user',
      'sandbox_exec',
      { command: 'true' },
      'success',
      execConnection,
    );
    for (let index = 0; index < 20; index += 1) {
      await execTrue();
      await baselines.spawnTrue();
      await baselines.bareBwrap();
    }
    const overMcp: number[] = [];
    const spawned: number[] = [];
    const bare: number[] = [];
    for (let index = 0; index < samples; index += 1) {
      overMcp.push(await timed(execTrue));
      spawned.push(await baselines.spawnTrue());
      bare.push(await baselines.bareBwrap());
    }

    // No-op tools/call vs plain JSON POST.
    const noOp = mcpCall(base, disabledKey, 'bench-user', 'sandbox_exec', { command: 'true' }, 'refusal');
    const plainPost = async () => {
      const response = await request(`${base}/v1/uploads/resign`, {
        method: 'POST',
        dispatcher,
        headers: {
          authorization: `Bearer ${enabledKey}`,
          'x-chat-user': 'bench-user',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ storagePath: 'uploads/00000000000000000000000000000000' }),
      });
      await response.body.arrayBuffer();
      return response.statusCode === 404 ? 200 : response.statusCode;
    };
    for (let index = 0; index < 100; index += 1) {
      await noOp();
      await plainPost();
    }
    const noOpTimes: number[] = [];
    const plainTimes: number[] = [];
    for (let index = 0; index < samples * 2; index += 1) {
      noOpTimes.push(await timed(noOp));
      plainTimes.push(await timed(plainPost));
    }

    // First call into a new workspace vs the same call warm (exec of `true`: the cheapest call
    // that starts a sandbox).
    const first: number[] = [];
    const warm: number[] = [];
    const users = Array.from({ length: 50 }, (_, index) => `first-${index}`);
    for (const user of users) {
      first.push(await timed(mcpCall(base, enabledKey, user, 'sandbox_exec', { command: 'true' })));
      // Let the new workspace's first usage measurement (off the request path) finish.
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    for (const user of users)
      warm.push(await timed(mcpCall(base, enabledKey, user, 'sandbox_exec', { command: 'true' })));

    // Memory across many MCP calls (no-op calls: the MCP path itself, not sandbox processes).
    const rss: Array<{ calls: number; rssMiB: number }> = [{ calls: 0, rssMiB: (await rssKiB(server)) / 1024 }];
    // The per-user limit is at most 10,000 calls a minute: the loop goes round 20 users.
    const noOpFor = Array.from({ length: 20 }, (_, index) =>
      mcpCall(base, disabledKey, `memory-${index}`, 'sandbox_exec', { command: 'true' }, 'refusal'),
    );
    for (let call = 1; call <= memoryCalls; call += 1) {
      await (noOpFor[call % noOpFor.length] as () => Promise<number>)();
      if (call % 2_000 === 0) rss.push({ calls: call, rssMiB: (await rssKiB(server)) / 1024 });
    }

    const execRatio = median(overMcp) / median(bare);
    const spawnRatio = median(overMcp) / median(spawned);
    const noOpRatio = median(noOpTimes) / median(plainTimes);
    const firstExtra = median(first) - median(warm);
    console.log(`\nSandbox: medians of ${samples} sequential calls (bwrap backend, SQLite)`);
    console.table([
      { measure: "plain spawn('true') from Node (pinned process)", 'median ms': median(spawned).toFixed(2) },
      { measure: 'bare bwrap sandbox running `true` (pinned process)', 'median ms': median(bare).toFixed(2) },
      {
        measure: 'sandbox_exec `true` over MCP (warm, one keep-alive connection)',
        'median ms': median(overMcp).toFixed(2),
        ratio: `${spawnRatio.toFixed(3)}× spawn (≤ 2×), ${execRatio.toFixed(3)}× bwrap (≤ 1.0×)`,
      },
      { measure: 'plain JSON POST (/v1/uploads/resign)', 'median ms': median(plainTimes).toFixed(2) },
      {
        measure: 'no-op tools/call (gate refuses)',
        'median ms': median(noOpTimes).toFixed(2),
        ratio: `${noOpRatio.toFixed(3)}× (≤ 2×)`,
      },
      { measure: 'sandbox_exec `true`, second call (warm workspace)', 'median ms': median(warm).toFixed(2) },
      {
        measure: 'sandbox_exec `true`, first call (new workspace)',
        'median ms': median(first).toFixed(2),
        ratio: `provisioning ${firstExtra >= 0 ? '+' : ''}${firstExtra.toFixed(2)} ms`,
      },
    ]);
    console.log(
      `warm sandbox_exec \`true\` over MCP ${median(overMcp).toFixed(2)} ms (p10 ${quantile(overMcp, 0.1).toFixed(2)}, p90 ${quantile(overMcp, 0.9).toFixed(2)}) vs plain spawn('true') ${median(spawned).toFixed(2)} ms: ${spawnRatio.toFixed(3)}× (target ≤ 2×) ${spawnRatio <= 2 ? 'MET' : 'NOT MET'}`,
    );
    console.log(
      `first call into a new workspace: ${median(first).toFixed(2)} ms p50 (p10 ${quantile(first, 0.1).toFixed(2)}, p90 ${quantile(first, 0.9).toFixed(2)} ms), provisioning ${firstExtra.toFixed(2)} ms of it (target ≤ 40 ms p50) ${median(first) <= 40 ? 'MET' : 'NOT MET'}`,
    );
    console.log(`\nService RSS across ${memoryCalls} MCP calls:`);
    console.table(rss.map((point) => ({ calls: point.calls, 'RSS MiB': point.rssMiB.toFixed(1) })));
    const growth = (rss.at(-1)?.rssMiB ?? 0) - (rss[1]?.rssMiB ?? 0);
    console.log(`growth from 2k to ${memoryCalls} calls: ${growth.toFixed(1)} MiB`);
    return { execRatio, spawnRatio, noOpRatio, firstMs: median(first), growthMiB: growth };
  } finally {
    await execConnection.close();
    await server.stop();
    await baselines.stop();
    await dispatcher.close();
  }
}
