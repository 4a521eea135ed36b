import { Agent, request } from 'undici';
import { LEGACY_ERA, type McpEra, MODERN_ERA } from '../test/support/mcp-eras.js';
import { withProgressToken } from '../test/support/mcp-exchange.js';
import { ADMIN_TOKEN, processCpuSeconds, provisionAgent, startBenchServer } from './support.js';

const dispatcher = new Agent({ connections: 2 });
/** The longest run `--seconds` may ask for: the command must end within the exec timeout ceiling. */
const MAX_SECONDS = 100;

interface CallMeasure {
  cpuMs: number;
  wireBytes: number;
  notifications: number;
}

/** One `sandbox_exec` over raw JSON-RPC: the service's CPU for it and the bytes of its answer. */
async function measuredCall(
  base: string,
  pid: number,
  key: string,
  era: McpEra,
  args: Record<string, unknown>,
  progressToken: string | undefined,
): Promise<CallMeasure> {
  const call = era.call('sandbox_exec', args, 1);
  const { body, headers } = progressToken === undefined ? call : withProgressToken(call, progressToken);
  const cpuBefore = await processCpuSeconds(pid);
  const response = await request(`${base}/v1/sandbox/mcp`, {
    method: 'POST',
    dispatcher,
    headers: {
      authorization: `Bearer ${key}`,
      'x-chat-user': 'bench-progress',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  let wireBytes = 0;
  let text = '';
  for await (const chunk of response.body) {
    wireBytes += (chunk as Buffer).length;
    text += (chunk as Buffer).toString('utf8');
  }
  const cpuMs = ((await processCpuSeconds(pid)) - cpuBefore) * 1000;
  if (response.statusCode !== 200 || !text.includes('"exitCode":0')) {
    throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 300)}`);
  }
  return { cpuMs, wireBytes, notifications: text.split('"notifications/progress"').length - 1 };
}

/** The mean of each field over several calls. */
function meanOf(measures: CallMeasure[]): CallMeasure {
  const mean = (field: keyof CallMeasure) =>
    measures.reduce((sum, measure) => sum + measure[field], 0) / measures.length;
  return { cpuMs: mean('cpuMs'), wireBytes: mean('wireBytes'), notifications: mean('notifications') };
}

/**
 * Live output's cost: a command printing 10 lines a second for `seconds` (30 by default), run over
 * MCP without and then with a progress token, in each era, on one warm workspace of one service,
 * `rounds` times (1 by default; the two modes alternate): the service's CPU per call (its own
 * process, from /proc, in 10 ms ticks) and the bytes of the answer on the wire, and their ratios
 * (with ÷ without).
 */
export async function benchExecProgress(options: { seconds?: number; rounds?: number } = {}) {
  const seconds = options.seconds ?? 30;
  const rounds = options.rounds ?? 1;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_SECONDS) {
    throw new Error(`--seconds must be a whole number from 1 to ${MAX_SECONDS}`);
  }
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number from 1');
  const server = await startBenchServer('mordn', {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const pid = server.child.pid as number;
    const key = await provisionAgent(base, true);
    const lines = seconds * 10;
    const args = {
      command: `for i in $(seq 1 ${lines}); do echo "line $i of ${lines}: the bench's steady output"; sleep 0.1; done`,
      timeoutSeconds: Math.min(120, seconds + 20),
    };
    // Provision and warm the workspace first.
    await measuredCall(base, pid, key, LEGACY_ERA, { command: 'true' }, undefined);
    const rows: Array<Record<string, string | number>> = [];
    const ratios: Record<string, { cpu: number; bytes: number }> = {};
    for (const era of [LEGACY_ERA, MODERN_ERA]) {
      const measured: Record<'without' | 'with', CallMeasure[]> = { without: [], with: [] };
      for (let round = 0; round < rounds; round += 1) {
        measured.without.push(await measuredCall(base, pid, key, era, args, undefined));
        measured.with.push(await measuredCall(base, pid, key, era, args, 'bench'));
      }
      const without = meanOf(measured.without);
      const withProgress = meanOf(measured.with);
      ratios[era.kind] = { cpu: withProgress.cpuMs / without.cpuMs, bytes: withProgress.wireBytes / without.wireBytes };
      for (const [mode, measure] of [
        ['without a token', without],
        ['with a progress token', withProgress],
      ] as const) {
        rows.push({
          era: era.kind,
          mode,
          'service CPU ms per call': measure.cpuMs.toFixed(0),
          'bytes on the wire': Math.round(measure.wireBytes),
          notifications: Math.round(measure.notifications),
        });
      }
    }
    console.log(
      `\nLive output: ${lines} lines over ${seconds} s per call, means of ${rounds} call(s) each (bwrap backend, SQLite)`,
    );
    console.table(rows);
    for (const [era, ratio] of Object.entries(ratios)) {
      console.log(
        `${era}: service CPU ${ratio.cpu.toFixed(2)}× and bytes on the wire ${ratio.bytes.toFixed(2)}× with live output`,
      );
    }
    return ratios;
  } finally {
    await server.stop();
    await dispatcher.close();
  }
}
