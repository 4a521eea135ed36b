import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, FormData, request } from 'undici';
import { hostProcesses } from '../test/support/host-processes.js';
import { type ChatTurnResult, runChatTurn } from './chat-client.js';
import type { TurnKind } from './load-script.js';
import { sdkFloorCpuPerAnswer } from './sdk-floor.js';
import type { ProbedStats } from './servers/mordn-probed.js';
import {
  ADMIN_TOKEN,
  type BenchServer,
  chatBenchSetting,
  descendantProcesses,
  median,
  openFileDescriptors,
  pdfBytes,
  pinThisProcess,
  processCpuSeconds,
  processMemoryKiB,
  provisionAgent,
  quantile,
  resetPeakMemory,
  startBenchProcess,
} from './support.js';

const DELTAS = 100;
const DELTA_DELAY_MS = 20;
const FIRST_DELTA_P99_TARGET_MS = 250;
const CPU_PER_STREAM_TARGET_MS = 10;
/** The service's CPU per answer against the AI SDK's own path for the same answers, same run. */
const FLOOR_RATIO_TARGET = 1.5;
const UPLOAD_BYTES = 256 * 1024;
const UPLOAD_INTERVAL_MS = 100;
const KEEP_ALIVE_SETTLE_MS = 6_000;
/** Answers before a measured round, to the service and to the SDK floor alike (JIT, pools, caches). */
const WARM_UP_STREAMS = 40;
/** Measured rounds of pure chat, each after a round of the SDK floor. */
const PURE_ROUNDS = 3;
const mib = (kib: number) => (kib / 1024).toFixed(1);

interface ScenarioOptions {
  modelBaseUrl: string;
  sandbox: boolean;
  /** One entry per concurrent stream: what its turn does. */
  kinds: TurnKind[];
  /** Whether a steady stream of uploads runs beside the chats. */
  uploads: boolean;
  /** Added to the service's environment. */
  environment?: Record<string, string>;
  /** Measured rounds of `kinds` on the one (warm) service, each timed on its own; 1 by default. */
  rounds?: number;
  /** Runs before each measured round, while the service idles (the SDK floor's rounds). */
  beforeRound?: () => Promise<void>;
}

interface ScenarioResult {
  /** The turns of every measured round. */
  turns: Array<ChatTurnResult & { kind: TurnKind }>;
  /** The service's CPU seconds in each measured round (its answers persisted included). */
  roundCpuSeconds: number[];
  rssKiB: { start: number; peak: number; end: number };
  eventLoop: ProbedStats['eventLoop'];
  fds: { before: number; after: number };
  uploads: { ok: number; failed: number; latenciesMs: number[] };
  /** Descendants of the service when the streams had ended, and later (see `runScenario`). */
  processes: {
    atEnd: ReturnType<typeof classifyProcesses>;
    afterIdle?: ReturnType<typeof classifyProcesses>;
    /** Processes naming the service's data directory once it stopped. */
    afterStop: number;
  };
  /** Of each measured round. */
  wallSeconds: number[];
}

async function benchJson<T>(server: BenchServer, pathname: string, method = 'GET'): Promise<T> {
  const response = await request(`http://127.0.0.1:${server.port}${pathname}`, { method: method as 'GET' });
  return (response.statusCode === 204 ? undefined : await response.body.json()) as T;
}

/** Child processes of the service, told apart: tsx's esbuild helper, sandboxes, and the commands running in them. */
export function classifyProcesses(processes: Array<{ pid: number; parent: number; command: string }>) {
  // The sandbox's own chain is bwrap → bwrap → the supervisor; what the supervisor forks are commands.
  const supervisors = new Set(
    processes
      .filter((entry) => !entry.command.startsWith('bwrap') && entry.command.includes('supervisor.py'))
      .map((entry) => entry.pid),
  );
  const underSupervisor = new Set<number>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const entry of processes) {
      if (underSupervisor.has(entry.pid)) continue;
      if (supervisors.has(entry.parent) || underSupervisor.has(entry.parent)) {
        underSupervisor.add(entry.pid);
        grew = true;
      }
    }
  }
  const helpers = processes.filter((entry) => entry.command.includes('esbuild')).length;
  return { total: processes.length - helpers, sandboxes: supervisors.size, commands: underSupervisor.size };
}

async function uploadLoop(base: string, key: string, dispatcher: Agent, stop: { done: boolean }) {
  const result = { ok: 0, failed: 0, latenciesMs: [] as number[] };
  const bytes = pdfBytes(UPLOAD_BYTES);
  while (!stop.done) {
    const started = performance.now();
    try {
      const form = new FormData();
      form.set('file', new Blob([bytes], { type: 'application/pdf' }), 'load.pdf');
      const response = await request(`${base}/v1/uploads`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key}`, 'x-chat-user': 'uploader' },
        body: form,
      });
      await response.body.arrayBuffer();
      if (response.statusCode === 201) result.ok += 1;
      else result.failed += 1;
    } catch {
      result.failed += 1;
    }
    result.latenciesMs.push(performance.now() - started);
    await sleep(UPLOAD_INTERVAL_MS);
  }
  return result;
}

/**
 * One scenario on a fresh service (pinned to core 0, SQLite, fs storage): a warm-up round, then
 * every stream of `kinds` at once, one user each, with the service's CPU time, memory, event-loop
 * delay, descriptors and child processes read around it.
 */
async function runScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  // MORDN_BENCH_CPU_PROF=<directory>: a V8 CPU profile of each service, written when it stops.
  const profileDirectory = process.env.MORDN_BENCH_CPU_PROF;
  const service = await startBenchProcess('mordn-probed', {
    core: 0,
    ...(profileDirectory ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDirectory}`] } : {}),
    environment: {
      MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
      MORDN_MODEL: 'openai-compatible:bench',
      MORDN_MODEL_BASE_URL: options.modelBaseUrl,
      MORDN_LOG_LEVEL: process.env.MORDN_LOG_LEVEL ?? 'info',
      ...options.environment,
      ...(options.sandbox
        ? {
            MORDN_SANDBOX_ENABLED: 'true',
            MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
            // The shortest idle teardown, so that what is left afterwards can be read soon after.
            MORDN_SANDBOX_IDLE_SECONDS: '10',
          }
        : {}),
    },
  });
  const pid = service.child.pid as number;
  const base = `http://127.0.0.1:${service.port}`;
  // One pool per measured round: every round opens its connections as the first did.
  let dispatcher = new Agent({ connections: options.kinds.length + 16 });
  let dataDir = '';
  // Idle teardown runs 10 s after a workspace's last call; one more sweep is allowed for.
  const settleMs = options.sandbox ? 22_000 : KEEP_ALIVE_SETTLE_MS;
  try {
    const key = await provisionAgent(base, options.sandbox);
    dataDir = (await benchJson<ProbedStats>(service, '/__bench/stats')).dataDir;
    const turn = (kind: TurnKind, index: number, round: string, through = dispatcher) =>
      runChatTurn({
        base,
        key,
        user: `${round}-user-${index}`,
        chatId: `${round}-${index}`,
        spec: { kind, deltas: DELTAS, delayMs: DELTA_DELAY_MS, tag: `${round}-${index}` },
        dispatcher: through,
      }).then((result) => ({ ...result, kind }));

    // Warm-up: JIT, connection pools, statement cache, first workspaces.
    const warmKinds: TurnKind[] = options.kinds.slice(0, WARM_UP_STREAMS);
    const warmDispatcher = new Agent({ connections: warmKinds.length });
    const warm = await Promise.all(warmKinds.map((kind, index) => turn(kind, index, 'warm', warmDispatcher)));
    await warmDispatcher.close();
    const warmFailures = warm.filter((result) => !result.ok);
    if (warmFailures.length > 0) throw new Error(`warm-up failed: ${warmFailures[0]?.problem}`);
    // The baseline of descriptors has no connection of the warm-up left (keep-alive ends after ~4 s)
    // and, with sandboxes, none of the warm-up's workspace sandboxes (torn down when idle).
    await sleep(settleMs);

    const fdsBefore = await openFileDescriptors(pid);
    const start = await processMemoryKiB(pid);
    await resetPeakMemory(pid);
    let peak = start.rss;
    const sampler = setInterval(() => {
      void processMemoryKiB(pid).then((memory) => {
        peak = Math.max(peak, memory.rss, memory.peak);
      });
    }, 100);
    await benchJson(service, '/__bench/reset', 'POST');
    const turns: ScenarioResult['turns'] = [];
    const roundCpuSeconds: number[] = [];
    const wallSeconds: number[] = [];
    let uploaded: ScenarioResult['uploads'] = { ok: 0, failed: 0, latenciesMs: [] };
    for (let round = 0; round < (options.rounds ?? 1); round += 1) {
      await options.beforeRound?.();
      if (round > 0) {
        await dispatcher.close();
        dispatcher = new Agent({ connections: options.kinds.length + 16 });
      }
      const cpuBefore = await processCpuSeconds(pid);
      const started = performance.now();
      const stop = { done: false };
      const uploads = options.uploads ? uploadLoop(base, key, dispatcher, stop) : undefined;
      turns.push(...(await Promise.all(options.kinds.map((kind, index) => turn(kind, index, `load${round}`)))));
      stop.done = true;
      uploaded = (await uploads) ?? uploaded;
      wallSeconds.push((performance.now() - started) / 1000);
      // Persisting the last answers happens just after their streams end.
      await sleep(500);
      roundCpuSeconds.push((await processCpuSeconds(pid)) - cpuBefore);
    }
    const { eventLoop } = await benchJson<ProbedStats>(service, '/__bench/stats');
    clearInterval(sampler);
    const atEnd = classifyProcesses(await descendantProcesses(pid));
    await dispatcher.close();
    // Keep-alive connections (to the model, to the service's own MCP endpoint) time out after ~4 s.
    await sleep(settleMs);
    const end = await processMemoryKiB(pid);
    const fdsAfter = await openFileDescriptors(pid);
    peak = Math.max(peak, end.peak);
    const afterIdle = options.sandbox ? classifyProcesses(await descendantProcesses(pid)) : undefined;
    await service.stop();
    await sleep(500);
    const afterStop = (await hostProcesses(dataDir)).length;
    return {
      turns,
      roundCpuSeconds,
      rssKiB: { start: start.rss, peak, end: end.rss },
      eventLoop,
      fds: { before: fdsBefore, after: fdsAfter },
      uploads: uploaded,
      processes: {
        atEnd,
        ...(afterIdle === undefined ? {} : { afterIdle }),
        afterStop,
      },
      wallSeconds,
    };
  } finally {
    await dispatcher.close().catch(() => undefined);
    await service.stop();
  }
}

function firstDeltas(turns: ChatTurnResult[]): number[] {
  return turns.map((turn) => turn.firstDeltaMs).filter((value) => Number.isFinite(value));
}

function describeProcesses(found: ReturnType<typeof classifyProcesses>): string {
  return `${found.total} processes: ${found.sandboxes} sandboxes, ${found.commands} commands`;
}

function verdict(met: boolean): string {
  return met ? 'MET' : 'NOT MET';
}

function printScenario(title: string, result: ScenarioResult, withTargets: boolean) {
  const { turns } = result;
  const ok = turns.filter((turn) => turn.ok).length;
  const firsts = firstDeltas(turns);
  const p50 = firsts.length > 0 ? median(firsts) : Number.NaN;
  const p99 = firsts.length > 0 ? quantile(firsts, 0.99) : Number.NaN;
  const perRound = turns.length / result.roundCpuSeconds.length;
  // Each round's CPU per answer; the median round stands for the scenario.
  const roundCpuMs = result.roundCpuSeconds.map((seconds) => (seconds * 1000) / perRound);
  const cpuMs = median(roundCpuMs);
  const rounds = roundCpuMs.length;
  const target = (text: string, met: boolean) => (withTargets ? `${text} ${verdict(met)}` : '');
  console.log(`\n${title}`);
  const rows: Array<Record<string, string>> = [
    {
      measure: 'streams completed without error',
      value: `${ok} / ${turns.length} (${((100 * ok) / turns.length).toFixed(1)} %)`,
      target: target('100 %', ok === turns.length),
    },
    { measure: 'first text-delta p50', value: `${p50.toFixed(1)} ms`, target: '' },
    {
      measure: 'first text-delta p99',
      value: `${p99.toFixed(1)} ms`,
      target: target(`≤ ${FIRST_DELTA_P99_TARGET_MS} ms`, p99 <= FIRST_DELTA_P99_TARGET_MS),
    },
    {
      measure: rounds > 1 ? `service CPU per stream (median of ${rounds} rounds)` : 'service CPU per stream',
      value:
        rounds > 1
          ? `${cpuMs.toFixed(2)} ms (rounds: ${roundCpuMs.map((ms) => ms.toFixed(2)).join(', ')})`
          : `${cpuMs.toFixed(2)} ms (${(result.roundCpuSeconds[0] as number).toFixed(2)} s for ${turns.length})`,
      target: target(`≤ ${CPU_PER_STREAM_TARGET_MS} ms`, cpuMs <= CPU_PER_STREAM_TARGET_MS),
    },
    {
      // The model sends DELTAS; the service joins those that follow one another closely.
      measure: `text-delta chunks per stream at the client (of ${DELTAS} sent)`,
      value: `median ${median(turns.map((turn) => turn.textDeltas))}`,
      target: '',
    },
    {
      measure: 'service RSS start / peak / end',
      value: `${mib(result.rssKiB.start)} / ${mib(result.rssKiB.peak)} / ${mib(result.rssKiB.end)} MiB`,
      target: '',
    },
    {
      measure: 'event-loop delay p50 / p99 / max',
      value: `${result.eventLoop.p50.toFixed(1)} / ${result.eventLoop.p99.toFixed(1)} / ${result.eventLoop.max.toFixed(1)} ms`,
      target: '',
    },
    {
      measure: 'open fds before / after (connections idle-closed)',
      value: `${result.fds.before} / ${result.fds.after}`,
      target: target('no growth', result.fds.after <= result.fds.before),
    },
    {
      measure: 'sandbox processes when the streams ended',
      value: describeProcesses(result.processes.atEnd),
      target: target('no commands', result.processes.atEnd.commands === 0),
    },
  ];
  if (result.processes.afterIdle !== undefined) {
    rows.push({
      measure: 'sandbox processes after idle teardown (10 s idle)',
      value: describeProcesses(result.processes.afterIdle),
      target: '',
    });
  }
  rows.push({
    measure: 'processes of its data dir after stop',
    value: `${result.processes.afterStop}`,
    target: target('none', result.processes.afterStop === 0),
  });
  rows.push({
    measure: rounds > 1 ? 'wall time of each round' : 'wall time of the round',
    value: result.wallSeconds.map((seconds) => `${seconds.toFixed(1)} s`).join(', '),
    target: '',
  });
  const kinds = [...new Set(turns.map((turn) => turn.kind))];
  if (kinds.length > 1) {
    for (const kind of kinds) {
      const ofKind = turns.filter((turn) => turn.kind === kind);
      const times = firstDeltas(ofKind);
      rows.push({
        measure: `  ${kind} streams: ok, first-delta p50 / p99`,
        value: `${ofKind.filter((turn) => turn.ok).length} / ${ofKind.length}, ${median(times).toFixed(1)} / ${quantile(times, 0.99).toFixed(1)} ms`,
        target: '',
      });
    }
  }
  if (result.uploads.ok + result.uploads.failed > 0) {
    rows.push({
      measure: `uploads (${UPLOAD_BYTES / 1024} KiB PDF every ${UPLOAD_INTERVAL_MS} ms): ok / failed, p50 / p99`,
      value: `${result.uploads.ok} / ${result.uploads.failed}, ${median(result.uploads.latenciesMs).toFixed(1)} / ${quantile(result.uploads.latenciesMs, 0.99).toFixed(1)} ms`,
      target: '',
    });
  }
  console.table(rows);
  const problems = turns.filter((turn) => !turn.ok);
  for (const problem of problems.slice(0, 5)) console.log(`  failed ${problem.kind} stream: ${problem.problem}`);
  return { ok, p50, p99, cpuMs };
}

/** The SDK floor for the load's answers, this process moved to the service's core while it runs. */
/**
 * One round of the SDK floor for the load's answers (after `warmUp` answers of the same shape),
 * this process moved to the service's core while it runs: its CPU per answer (ms).
 */
async function measureFloor(modelBaseUrl: string, streams: number, warmUp: number): Promise<number> {
  pinThisProcess(0);
  try {
    return await sdkFloorCpuPerAnswer(modelBaseUrl, { streams, deltas: DELTAS, delayMs: DELTA_DELAY_MS, warmUp });
  } finally {
    pinThisProcess(1);
  }
}

/**
 * `npm run bench -- load`: concurrent chat streams against one service pinned to a core, the
 * scripted OpenAI-compatible model in its own process streaming `DELTAS` deltas `DELTA_DELAY_MS`
 * apart (the first at once), the load generator pinned to the other core.
 * - pure chat: `streams` users each sending one message, `PURE_ROUNDS` rounds on one warm
 *   service (targets: first text-delta p99 ≤ 250 ms, ≤ 10 ms of service CPU per stream, every
 *   stream complete);
 * - the SDK floor in the same run: before each pure-chat round, the AI SDK's own path for the
 *   same answers under the same load (provider, `streamText`, UI message stream, SSE encoding;
 *   see `sdk-floor`), in this process on the service's core, warmed up as the service is; the
 *   service's median CPU per answer against the floor's median (target ≤ 1.5×);
 * - the same again with every delta sent alone (`MORDN_CHAT_COALESCE_MS=0`, as the floor sends
 *   them), and what coalescing saves;
 * - mixed, reported only: a third of the streams call `sandbox_exec` through the model's tool
 *   call, one writes and publishes a file, beside a steady stream of uploads.
 *
 * `pureOnly` runs the default pure chat and its floor alone (with `MORDN_BENCH_CPU_PROF`, to profile).
 */
export async function benchLoad(options: { streams?: number; pureOnly?: boolean; rounds?: number } = {}) {
  const streams = options.streams ?? 200;
  const pureRounds = options.rounds ?? PURE_ROUNDS;
  const pinned = pinThisProcess(1);
  const model = await startBenchProcess('scripted-model', { core: 1 });
  const modelBaseUrl = `http://127.0.0.1:${model.port}/v1`;
  const heading = (name: string) =>
    `Load, ${name}: ${streams} concurrent streams × ${DELTAS} deltas ${DELTA_DELAY_MS} ms apart (service on core 0, ` +
    `${pinned ? 'model and load generator on core 1' : 'unpinned'}; ${chatBenchSetting()}, fs storage)`;
  const pureKinds = Array.from({ length: streams }, () => 'text' as const);
  /** Pure chat in rounds, each after a round of the SDK floor (machines are noisy: medians compare). */
  const pureAgainstFloor = async (title: string, environment: Record<string, string>, withTargets: boolean) => {
    const floorRounds: number[] = [];
    const result = await runScenario({
      modelBaseUrl,
      sandbox: false,
      kinds: pureKinds,
      uploads: false,
      environment,
      rounds: pureRounds,
      beforeRound: async () => {
        floorRounds.push(await measureFloor(modelBaseUrl, streams, floorRounds.length === 0 ? WARM_UP_STREAMS : 0));
      },
    });
    const figures = printScenario(heading(title), result, withTargets);
    const floorMs = median(floorRounds);
    const ratio = figures.cpuMs / floorMs;
    const serviceRounds = result.roundCpuSeconds.map((seconds) => (seconds * 1000) / streams);
    const list = (values: number[]) => values.map((value) => value.toFixed(2)).join(', ');
    console.log(
      `Service vs AI SDK floor in the same run (this checkout's ai and provider, the same load), CPU per answer:\n` +
        `  service ${figures.cpuMs.toFixed(2)} ms (rounds: ${list(serviceRounds)})\n` +
        `  SDK floor ${floorMs.toFixed(2)} ms (rounds, each just before the service's: ${list(floorRounds)})\n` +
        `  ratio ${ratio.toFixed(2)}× (round by round: ${serviceRounds.map((value, index) => `${(value / (floorRounds[index] as number)).toFixed(2)}×`).join(', ')}); ` +
        `target ≤ ${FLOOR_RATIO_TARGET}× ${verdict(ratio <= FLOOR_RATIO_TARGET)}`,
    );
    return { ...figures, floorMs, ratio };
  };
  try {
    const pure = await pureAgainstFloor('pure chat (default MORDN_CHAT_COALESCE_MS)', {}, true);
    if (options.pureOnly) return pure;
    // Every delta sent on alone, as the model sent it (as the floor does): what coalescing saves.
    const each = await pureAgainstFloor(
      'pure chat, every delta alone (MORDN_CHAT_COALESCE_MS=0)',
      { MORDN_CHAT_COALESCE_MS: '0' },
      false,
    );
    console.log(
      `\ncoalesced vs every delta alone: service CPU per stream ${(pure.cpuMs / each.cpuMs).toFixed(3)}×, ` +
        `first text-delta p50 ${(pure.p50 / each.p50).toFixed(3)}×, p99 ${(pure.p99 / each.p99).toFixed(3)}×`,
    );
    const mixedKinds = Array.from(
      { length: streams },
      (_, index): TurnKind => (index === 1 ? 'publish' : index % 3 === 0 ? 'exec' : 'text'),
    );
    const mixed = await runScenario({ modelBaseUrl, sandbox: true, kinds: mixedKinds, uploads: true });
    printScenario(
      `${heading('mixed')}; ${mixedKinds.filter((kind) => kind === 'exec').length} call sandbox_exec, 1 publishes, uploads beside — reported only`,
      mixed,
      false,
    );
    return pure;
  } finally {
    await model.stop();
  }
}
