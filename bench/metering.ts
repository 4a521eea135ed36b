import { Client } from 'undici';
import { startScriptedModelServer } from '../test/support/scripted-model-server.js';
import { timeChatTurn } from './chat.js';
import { mcpCall } from './sandbox.js';
import {
  ADMIN_TOKEN,
  type BenchServer,
  median,
  processCpuSeconds,
  provisionAgent,
  startBenchServer,
} from './support.js';

type Mode = 'off' | 'on';

/**
 * `npm run bench -- metering`: what usage metering and limits cost, against the same service
 * without them, in the same run. Two services (`BENCH_METERING=off` and on, each pinned to core
 * 0, one busy at a time) chat with one scripted model reporting usage; rounds alternate between
 * them. Per mode, medians of the rounds: the first text-delta of a turn and the service's CPU per
 * answer (a 200-token answer, one turn at a time: limits read, each step's usage written), and a
 * warm `sandbox_exec \`true\`` over MCP (the CPU-limit read, the tool call's count) with the
 * service's CPU per call. Target: each within 3 % of off.
 */
export async function benchMetering(options: { rounds?: number } = {}) {
  const rounds = options.rounds ?? 6;
  const turnsPerRound = 40;
  const callsPerRound = 60;
  const model = await startScriptedModelServer(() => ({
    text: Array.from({ length: 200 }, (_, index) => (index === 0 ? 'Hi' : ' x')),
    usage: { promptTokens: 120, completionTokens: 200 },
  }));
  const environment = {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_MODEL: 'openai-compatible:bench',
    MORDN_MODEL_BASE_URL: model.baseUrl,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
  };
  const servers: Record<Mode, BenchServer> = {
    off: await startBenchServer('mordn', { ...environment, BENCH_METERING: 'off' }),
    on: await startBenchServer('mordn', environment),
  };
  const connections: Client[] = [];
  try {
    const setups = {} as Record<Mode, { base: string; key: string; exec: () => Promise<number> }>;
    for (const mode of ['off', 'on'] as const) {
      const base = `http://127.0.0.1:${servers[mode].port}`;
      const key = await provisionAgent(base, true);
      const connection = new Client(base, { pipelining: 1 });
      connections.push(connection);
      const exec = mcpCall(base, key, 'bench-user', 'sandbox_exec', { command: 'true' }, 'success', connection);
      setups[mode] = { base, key, exec };
    }
    const round = async (mode: Mode) => {
      const { base, key, exec } = setups[mode];
      const pid = servers[mode].child.pid as number;
      const firsts: number[] = [];
      let cpu = await processCpuSeconds(pid);
      for (let index = 0; index < turnsPerRound; index += 1) {
        firsts.push((await timeChatTurn(base, key, `metering-${mode}`, 'hello')).firstMs);
      }
      const chatCpuMs = ((await processCpuSeconds(pid)) - cpu) * (1000 / turnsPerRound);
      const execs: number[] = [];
      cpu = await processCpuSeconds(pid);
      for (let index = 0; index < callsPerRound; index += 1) {
        const started = performance.now();
        if ((await exec()) !== 200) throw new Error('sandbox_exec failed');
        execs.push(performance.now() - started);
      }
      const execCpuMs = ((await processCpuSeconds(pid)) - cpu) * (1000 / callsPerRound);
      return { firstMs: median(firsts), chatCpuMs, execMs: median(execs), execCpuMs };
    };
    // Warm both up first (JIT, statement caches, the workspace's sandbox).
    await round('off');
    await round('on');
    const results: Record<Mode, Array<Awaited<ReturnType<typeof round>>>> = { off: [], on: [] };
    for (let index = 0; index < rounds; index += 1) {
      const order: Mode[] = index % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) results[mode].push(await round(mode));
    }
    type Measure = keyof Awaited<ReturnType<typeof round>>;
    const of = (mode: Mode, measure: Measure) => median(results[mode].map((each) => each[measure]));
    const row = (label: string, measure: Measure) => {
      const ratio = of('on', measure) / of('off', measure);
      return {
        measure: label,
        off: of('off', measure).toFixed(3),
        on: of('on', measure).toFixed(3),
        ratio: `${ratio.toFixed(3)}× (≤ 1.03×) ${ratio <= 1.03 ? 'MET' : 'NOT MET'}`,
      };
    };
    console.log(
      `\nMetering: medians of ${rounds} alternating rounds (${turnsPerRound} turns of 200 tokens, ${callsPerRound} warm execs each)`,
    );
    const table = [
      row('first text-delta, POST /v1/chat (ms)', 'firstMs'),
      row('service CPU per answer (ms)', 'chatCpuMs'),
      row('warm sandbox_exec `true` over MCP (ms)', 'execMs'),
      row('service CPU per sandbox_exec (ms)', 'execCpuMs'),
    ];
    console.table(table);
    return Object.fromEntries(
      (['firstMs', 'chatCpuMs', 'execMs', 'execCpuMs'] as const).map((measure) => [
        measure,
        of('on', measure) / of('off', measure),
      ]),
    );
  } finally {
    await Promise.all(connections.map((connection) => connection.close()));
    await Promise.all([servers.off.stop(), servers.on.stop()]);
    await model.close();
  }
}
