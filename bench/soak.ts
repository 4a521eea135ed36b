import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type Dispatcher, FormData, request } from 'undici';
import { runChatTurn } from './chat-client.js';
import type { ProbedStats } from './servers/mordn-probed.js';
import {
  ADMIN_TOKEN,
  type BenchServer,
  openFileDescriptorKinds,
  pdfBytes,
  pinThisProcess,
  processMemoryKiB,
  provisionAgent,
  startBenchProcess,
} from './support.js';

const WORKERS = 6;
/** Users whose workspaces the MCP calls and sandbox chats go round: a fixed set, so workspaces should stay put. */
const POOL_USERS = 6;
const PAUSE_MS = 25;
const SETTLE_MS = 6_000;
const UPLOAD_BYTES = 64 * 1024;

type Operation = 'mcp' | 'upload' | 'resign' | 'chat';
/** What each worker goes round, from its own offset: mostly MCP calls, then resigns, chats and uploads. */
const CYCLE: Operation[] = ['mcp', 'upload', 'mcp', 'resign', 'chat', 'mcp', 'resign', 'chat'];

interface Sample {
  minute: number;
  operations: number;
  failures: number;
  rssMiB: number;
  heapMiB: number;
  fds: number;
  sockets: number;
  databaseKiB: number;
  workspaces: number;
}

interface Client {
  base: string;
  key: string;
  dispatcher: Dispatcher;
}

async function agentRequest(client: Client, method: string, pathname: string, user: string, body?: unknown) {
  const response = await request(`${client.base}${pathname}`, {
    method: method as 'POST',
    dispatcher: client.dispatcher,
    headers: {
      authorization: `Bearer ${client.key}`,
      'x-chat-user': user,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function mcpCall(client: Client, user: string, name: string, args: Record<string, unknown>) {
  const response = await request(`${client.base}/v1/sandbox/mcp`, {
    method: 'POST',
    dispatcher: client.dispatcher,
    headers: {
      authorization: `Bearer ${client.key}`,
      'x-chat-user': user,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const body = (await response.body.json()) as { result?: { isError?: boolean; content?: Array<{ text?: string }> } };
  if (response.statusCode !== 200 || !body.result || body.result.isError) {
    throw new Error(`${name} failed: ${JSON.stringify(body).slice(0, 200)}`);
  }
  return body.result.content?.[0]?.text ?? '';
}

async function uploadFile(client: Client, user: string, bytes: Uint8Array): Promise<string> {
  const form = new FormData();
  form.set('file', new Blob([bytes], { type: 'application/pdf' }), 'soak.pdf');
  const response = await request(`${client.base}/v1/uploads`, {
    method: 'POST',
    dispatcher: client.dispatcher,
    headers: { authorization: `Bearer ${client.key}`, 'x-chat-user': user },
    body: form,
  });
  const body = (await response.body.json()) as { storagePath?: string };
  if (response.statusCode !== 201 || !body.storagePath) throw new Error(`upload answered ${response.statusCode}`);
  return body.storagePath;
}

/** One operation of the mix; throws when the service answered anything but success. */
async function perform(client: Client, operation: Operation, round: number, worker: number, kept: string[]) {
  const user = `soak-user-${(round + worker) % POOL_USERS}`;
  const tag = `${worker}-${round}`;
  if (operation === 'mcp') {
    const step = round % 3;
    if (step === 0) {
      const output = await mcpCall(client, user, 'sandbox_exec', { command: `echo soak-${tag}` });
      if (!output.includes(`soak-${tag}`)) throw new Error('exec output lost');
    } else if (step === 1) {
      await mcpCall(client, user, 'sandbox_write_file', { path: `soak/${worker}.txt`, content: `round ${tag}` });
      const read = await mcpCall(client, user, 'sandbox_read_file', { path: `soak/${worker}.txt` });
      if (!read.includes(`round ${tag}`)) throw new Error('read back something else');
    } else {
      await mcpCall(client, user, 'sandbox_list_files', {});
    }
  } else if (operation === 'upload') {
    const uploader = `soak-uploader-${worker}`;
    const storagePath = await uploadFile(client, uploader, pdfBytes(UPLOAD_BYTES));
    const resigned = await agentRequest(client, 'POST', '/v1/uploads/resign', uploader, { storagePath });
    if (resigned.status !== 200) throw new Error(`resign answered ${resigned.status}`);
    const deleted = await agentRequest(client, 'DELETE', '/v1/uploads', uploader, { storagePaths: [storagePath] });
    if (deleted.status !== 204) throw new Error(`delete answered ${deleted.status}`);
  } else if (operation === 'resign') {
    const storagePath = kept[round % kept.length] as string;
    const resigned = await agentRequest(client, 'POST', '/v1/uploads/resign', 'soak-keeper', { storagePath });
    if (resigned.status !== 200) throw new Error(`resign answered ${resigned.status}`);
  } else {
    const chatId = `soak-${tag}`;
    const kind = round % 4 === 0 ? 'exec' : 'text';
    const turn = await runChatTurn({
      ...client,
      user,
      chatId,
      spec: { kind, deltas: 20, delayMs: 5, tag },
    });
    if (!turn.ok) throw new Error(`chat: ${turn.problem}`);
    const history = await agentRequest(client, 'GET', `/v1/chats/${chatId}`, user);
    if (history.status !== 200) throw new Error(`history answered ${history.status}`);
    const deleted = await agentRequest(client, 'DELETE', `/v1/chats/${chatId}`, user);
    if (deleted.status !== 204) throw new Error(`chat delete answered ${deleted.status}`);
  }
}

/** A least-squares slope (per minute) of `values` over `minutes`. */
function slope(minutes: number[], values: number[]): number {
  const n = minutes.length;
  const mx = minutes.reduce((sum, value) => sum + value, 0) / n;
  const my = values.reduce((sum, value) => sum + value, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (let index = 0; index < n; index += 1) {
    numerator += ((minutes[index] as number) - mx) * ((values[index] as number) - my);
    denominator += ((minutes[index] as number) - mx) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}

/**
 * Flat, growing or shrinking, from the samples after the first minute (warm-up): the fitted slope
 * of the later half of them (a leak keeps its slope, filling caches level off), projected over the
 * whole span, against a tolerance of `absolute` or `relative` of the first value, whichever is larger.
 */
function trendVerdict(
  samples: Sample[],
  column: keyof Sample,
  tolerance: { absolute: number; relative: number },
): string {
  const after = samples.filter((sample) => sample.minute >= 1);
  if (after.length < 2) return 'too few samples';
  const minutes = after.map((sample) => sample.minute);
  const values = after.map((sample) => sample[column]);
  const whole = slope(minutes, values);
  const half = Math.max(2, Math.ceil(after.length / 2));
  const later = slope(minutes.slice(-half), values.slice(-half));
  const span = (minutes.at(-1) as number) - (minutes[0] as number);
  const change = later * span;
  const allowed = Math.max(tolerance.absolute, Math.abs(values[0] as number) * tolerance.relative);
  const word = Math.abs(change) <= allowed ? 'flat' : change > 0 ? 'GROWING' : 'shrinking';
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)}`;
  const detail =
    after.length < 4
      ? `${signed(whole)}/min; ${after.length} samples: indicative`
      : `${signed(whole)}/min overall, ${signed(later)}/min over the last ${half} samples`;
  return `${word} (${detail}; allowed ±${allowed.toFixed(1)} over ${span.toFixed(0)} min)`;
}

async function stats(server: BenchServer): Promise<ProbedStats> {
  const response = await request(`http://127.0.0.1:${server.port}/__bench/stats?gc=1`);
  return (await response.body.json()) as ProbedStats;
}

/**
 * `npm run bench -- soak [--minutes N] [--sample-seconds S]` (10 minutes, a sample a minute):
 * `WORKERS` clients go round MCP calls (exec, write + read back, list) in a fixed set of
 * workspaces, uploads (each resigned, then deleted), resigns of kept uploads, and chats (some
 * calling `sandbox_exec`; each read back, then deleted), so that nothing should accumulate. Each
 * sample pauses the mix, lets in-flight work end, and reads the service's RSS, heap after a
 * forced GC, open fds, SQLite size and workspace rows; a table and a trend verdict per column follow.
 */
export async function benchSoak(options: { minutes?: number; sampleSeconds?: number } = {}) {
  const minutes = options.minutes ?? 10;
  const sampleMs = (options.sampleSeconds ?? 60) * 1000;
  pinThisProcess(1);
  const model = await startBenchProcess('scripted-model', { core: 1 });
  const service = await startBenchProcess('mordn-probed', {
    core: 0,
    nodeFlags: ['--expose-gc'],
    environment: {
      MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
      MORDN_MODEL: 'openai-compatible:bench',
      MORDN_MODEL_BASE_URL: `http://127.0.0.1:${model.port}/v1`,
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
      MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '8',
      MORDN_LOG_LEVEL: process.env.MORDN_LOG_LEVEL ?? 'warn',
    },
  });
  const dispatcher = new Agent({ connections: WORKERS * 2 });
  const pid = service.child.pid as number;
  try {
    const client: Client = {
      base: `http://127.0.0.1:${service.port}`,
      key: '',
      dispatcher,
    };
    client.key = await provisionAgent(client.base, true);
    const kept: string[] = [];
    for (let index = 0; index < 4; index += 1)
      kept.push(await uploadFile(client, 'soak-keeper', pdfBytes(UPLOAD_BYTES)));

    let operations = 0;
    let failures = 0;
    const problems = new Map<string, number>();
    let paused: Promise<void> | undefined;
    let running = true;

    const samples: Sample[] = [];
    const sample = async (minute: number) => {
      const found = await stats(service);
      const memory = await processMemoryKiB(pid);
      samples.push({
        minute,
        operations,
        failures,
        rssMiB: memory.rss / 1024,
        heapMiB: found.heapUsedBytes / 2 ** 20,
        ...(await openFileDescriptorKinds(pid)),
        databaseKiB: found.databaseBytes / 1024,
        workspaces: found.workspaces,
      });
    };

    // Pausing: each worker waits on `paused` before its next operation; a sample waits until all do.
    let waiting = 0;
    let release: () => void = () => undefined;
    const pause = async () => {
      paused = new Promise<void>((resolve) => {
        release = resolve;
      });
      while (waiting < WORKERS) await sleep(20);
      // Keep-alive connections of the last operations close after ~5 s idle: what is open after that was kept.
      await sleep(SETTLE_MS);
    };
    const resume = () => {
      paused = undefined;
      release();
    };
    const started = performance.now();
    // The first sample is the idle service before any of the mix.
    await sample(0);
    const loops = Array.from({ length: WORKERS }, async (_, index) => {
      for (let round = 0; running; round += 1) {
        if (paused) {
          waiting += 1;
          await paused;
          waiting -= 1;
        }
        if (!running) break;
        const operation = CYCLE[(round + index) % CYCLE.length] as Operation;
        try {
          await perform(client, operation, round, index, kept);
        } catch (error) {
          failures += 1;
          const message = `${operation}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 160);
          problems.set(message, (problems.get(message) ?? 0) + 1);
        }
        operations += 1;
        await sleep(PAUSE_MS);
      }
    });

    const total = minutes * 60_000;
    for (let at = sampleMs; at <= total + 1; at += sampleMs) {
      await sleep(Math.max(0, started + at - performance.now()));
      await pause();
      await sample(at / 60_000);
      resume();
    }
    running = false;
    resume();
    await Promise.all(loops);

    console.log(
      `\nSoak: ${minutes} min, ${WORKERS} clients (MCP calls in ${POOL_USERS} workspaces, uploads resigned and deleted, ` +
        'resigns, chats read back and deleted); service on core 0 (SQLite, fs storage, bwrap), samples taken with the mix paused and idle for 6 s',
    );
    console.table(
      samples.map((entry) => ({
        minute: entry.minute.toFixed(1),
        operations: entry.operations,
        failures: entry.failures,
        'RSS MiB': entry.rssMiB.toFixed(1),
        'heap after GC MiB': entry.heapMiB.toFixed(1),
        fds: entry.fds,
        'of them sockets': entry.sockets,
        'DB KiB': entry.databaseKiB.toFixed(0),
        workspaces: entry.workspaces,
      })),
    );
    console.table([
      { column: 'RSS', trend: trendVerdict(samples, 'rssMiB', { absolute: 8, relative: 0.05 }) },
      { column: 'heap after GC', trend: trendVerdict(samples, 'heapMiB', { absolute: 2, relative: 0.05 }) },
      { column: 'fds', trend: trendVerdict(samples, 'fds', { absolute: 4, relative: 0 }) },
      { column: 'DB size', trend: trendVerdict(samples, 'databaseKiB', { absolute: 256, relative: 0.1 }) },
      { column: 'workspaces', trend: trendVerdict(samples, 'workspaces', { absolute: 0, relative: 0 }) },
    ]);
    console.log(`operations: ${operations}, failed: ${failures}`);
    for (const [message, count] of [...problems].slice(0, 10)) console.log(`  ${count}× ${message}`);
    return { samples, failures };
  } finally {
    await dispatcher.close().catch(() => undefined);
    await service.stop();
    await model.stop();
  }
}
