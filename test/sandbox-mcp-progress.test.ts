import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_OUTPUT_STOPPED, progressBudget } from '../src/mcp/exec-progress.js';
import { toolResultBudget } from '../src/mcp/response-bounds.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { hostProcesses } from './support/host-processes.js';
import { type EraRequest, MCP_ERAS, type McpEra, type ProgressParams } from './support/mcp-eras.js';
import {
  type Exchange,
  type ExchangedMessage,
  exchangeMcp,
  liveOutput,
  withProgressToken,
} from './support/mcp-exchange.js';
import { pollUntil } from './support/poll.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const MIB = 1024 * 1024;
const TEN_LINES = 'for i in $(seq 1 10); do echo line-$i; sleep 0.3; done';
const TEN_LINES_OUTPUT = Array.from({ length: 10 }, (_, index) => `line-${index + 1}\n`).join('');

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService({
    environment: {
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_REDACT_PATTERNS: JSON.stringify(['internal-token-[0-9]+']),
      MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
    },
  });
  fixture = await createAgentFixture(service.database.db, { published: ENABLED });
});
afterAll(() => service.close());

/** A raw `sandbox_exec` exchange of `era`, with a progress token unless `token` is null. */
function exec(
  era: McpEra,
  command: string,
  options: {
    token?: string | number | null;
    userId?: string;
    target?: TestService;
    key?: string;
    signal?: AbortSignal;
  } = {},
  onMessage?: (message: ExchangedMessage) => void,
): Promise<Exchange> {
  const call = era.call('sandbox_exec', { command });
  const request: EraRequest = options.token === null ? call : withProgressToken(call, options.token ?? 'live-1');
  return exchangeMcp(options.target ?? service, options.key ?? fixture.key, request, {
    userId: options.userId ?? 'alice',
    ...(options.signal ? { signal: options.signal } : {}),
    ...(onMessage ? { onMessage } : {}),
  });
}

/** The tool result a response carries, decoded from its text. */
function resultOf(exchange: Exchange) {
  return JSON.parse(exchange.response.result.content[0].text);
}

function expectIncreasingProgress(exchange: Exchange): void {
  const values = exchange.notifications.map((entry) => entry.message.params.progress as number);
  for (let index = 1; index < values.length; index += 1) {
    expect(values[index]).toBeGreaterThan(values[index - 1] as number);
  }
}

/** What today's responses are, byte for byte, with the command's duration (which varies) as `…`. */
const GOLDEN_STRUCTURED =
  '{"exitCode":3,"stdout":"a\\"b\\n","stderr":"oops\\n","truncated":false,"timedOut":false,"durationMs":…}';
const GOLDEN_RESULT = `{"content":[{"type":"text","text":${JSON.stringify(GOLDEN_STRUCTURED)}}],"structuredContent":${GOLDEN_STRUCTURED}`;
const GOLDEN = {
  legacy: `{"result":${GOLDEN_RESULT}},"jsonrpc":"2.0","id":2}`,
  modern: `{"result":${GOLDEN_RESULT},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mordn-sandbox","version":"1.0.0"}}},"jsonrpc":"2.0","id":2}`,
};

describe.each(MCP_ERAS)('live output of sandbox_exec: $name', (era) => {
  it('reaches a real client with a progress callback as the lines are written, before the result', async () => {
    const client = await era.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, 'alice'));
    try {
      // The workspace is made first: the first notification's time is the live output's, not a cold start's.
      await client.callTool('sandbox_exec', { command: 'true' });
      const seen: Array<ProgressParams & { at: number }> = [];
      let resolved = false;
      const started = performance.now();
      const result = await client.callTool(
        'sandbox_exec',
        { command: TEN_LINES },
        {
          onprogress: (progress) => {
            expect(resolved).toBe(false);
            seen.push({ ...progress, at: performance.now() - started });
          },
        },
      );
      resolved = true;
      expect(result.value).toMatchObject({ exitCode: 0, stdout: TEN_LINES_OUTPUT });
      expect(seen.length).toBeGreaterThanOrEqual(5);
      expect((seen[0] as { at: number }).at).toBeLessThan(1000);
      expect(seen.map((progress) => progress.message).join('')).toBe(TEN_LINES_OUTPUT);
      for (const progress of seen) {
        expect(progress._meta).toEqual({ 'mordn/stream': 'stdout' });
        expect(progress.total).toBeUndefined();
      }
      expect(seen.at(-1)?.progress).toBe(Buffer.byteLength(TEN_LINES_OUTPUT));
      // Spread over the run, not sent at its end.
      expect((seen[4] as { at: number }).at - (seen[0] as { at: number }).at).toBeGreaterThan(800);
    } finally {
      await client.close();
    }
  });

  it('answers a call without a token byte for byte as before: one JSON body', async () => {
    const exchange = await exec(era, 'printf "a\\"b\\n"; echo oops >&2; exit 3', { token: null });
    expect(exchange.status).toBe(200);
    expect(exchange.contentType).toBe('application/json');
    expect(exchange.body.toString('utf8').replace(/(\\?"durationMs\\?":)\d+/g, '$1…')).toBe(GOLDEN[era.kind]);
  });

  it('labels interleaved stdout and stderr, one stream per notification', async () => {
    const exchange = await exec(era, 'for i in 1 2 3; do echo out-$i; sleep 0.2; echo err-$i >&2; sleep 0.2; done', {
      token: 42,
    });
    expect(exchange.contentType).toBe('text/event-stream');
    expect(liveOutput(exchange.notifications, 'stdout')).toBe('out-1\nout-2\nout-3\n');
    expect(liveOutput(exchange.notifications, 'stderr')).toBe('err-1\nerr-2\nerr-3\n');
    expect(exchange.notifications.map((entry) => entry.message.params.message)).toEqual([
      'out-1\n',
      'err-1\n',
      'out-2\n',
      'err-2\n',
      'out-3\n',
      'err-3\n',
    ]);
    for (const { message } of exchange.notifications) {
      expect(message.params.progressToken).toBe(42);
      expect(Object.keys(message.params._meta)).toEqual(['mordn/stream']);
    }
    expectIncreasingProgress(exchange);
    expect(exchange.response.result.structuredContent).toMatchObject({
      stdout: 'out-1\nout-2\nout-3\n',
      stderr: 'err-1\nerr-2\nerr-3\n',
    });
  });

  it('sends at most 4 notifications a second, and none while the command is silent', async () => {
    const exchange = await exec(era, 'for i in $(seq 1 40); do echo $i; sleep 0.05; done; sleep 1.2; echo after');
    const times = exchange.notifications.map((entry) => entry.at);
    expect(times.length).toBeGreaterThanOrEqual(6);
    for (let index = 4; index < times.length; index += 1) {
      // Five notifications span at least a second (sent 250 ms apart; a little arrival jitter allowed).
      expect((times[index] as number) - (times[index - 4] as number)).toBeGreaterThan(950);
    }
    const messages = exchange.notifications.map((entry) => entry.message.params.message);
    expect(messages.join('')).toBe(`${Array.from({ length: 40 }, (_, index) => `${index + 1}\n`).join('')}after\n`);
    // Nothing between the burst's last line and the line after the pause.
    expect(messages.at(-1)).toBe('after\n');
    expect((times.at(-1) as number) - (times.at(-2) as number)).toBeGreaterThan(1000);
  });

  it('kills the command when the client goes away while output streams', async () => {
    const probe = `abort-probe-${randomUUID()}`;
    const controller = new AbortController();
    const running = exec(
      era,
      `: ${probe}; for i in $(seq 1 40); do echo tick-$i; sleep 0.1; done; touch ${probe}`,
      { signal: controller.signal, userId: 'bob' },
      () => controller.abort(),
    ).catch((error: Error) => error);
    expect(await running).toBeInstanceOf(Error);
    const left = await pollUntil(
      () => hostProcesses(probe),
      (pids) => pids.length === 0,
      { timeoutMs: 3_000 },
    );
    expect(left).toEqual([]);
    const after = await exec(era, `ls ${probe} 2>&1; true`, { token: null, userId: 'bob' });
    expect(resultOf(after).stdout).toMatch(/No such file/);
    expect(await service.database.db.selectFrom('workspace_leases').selectAll().execute()).toEqual([]);
  });
});

/** The service's own CPU time and resident memory while `run` runs (it serves in this process). */
async function measure<T>(run: () => Promise<T>): Promise<{ value: T; cpuMs: number; rssGrowthMiB: number }> {
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const cpuBefore = process.cpuUsage();
  try {
    const value = await run();
    const cpu = process.cpuUsage(cpuBefore);
    return { value, cpuMs: (cpu.user + cpu.system) / 1000, rssGrowthMiB: (peak - rssBefore) / MIB };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * Each flood, and how much the service's resident memory may grow while it runs: far less than the
 * output (kept, it would take at least as much again), though garbage not yet collected counts.
 */
const FLOODS = [
  ['200 MB without a line end', "head -c 200M /dev/zero | tr '\\0' x", 128],
  ['200 MB of invalid UTF-8, control bytes and quotes', `yes "$(printf '\\377\\376\\001"\\\\')" | head -c 200M`, 128],
  ['5 × 2 MB with pauses', "for i in 1 2 3 4 5; do head -c 2M /dev/zero | tr '\\0' p; sleep 0.4; done", 48],
] as const;

/** Checks a flood's exchange against the bound of a service whose output limit is `maxOutputBytes`. */
function expectBoundedFlood(exchange: Exchange, maxOutputBytes: number): void {
  expect(exchange.status).toBe(200);
  expect(exchange.contentType).toBe('text/event-stream');
  expect(exchange.body.length).toBeLessThanOrEqual(Math.min(MIB, maxOutputBytes + 4096));
  const progressBytes = exchange.notifications.reduce((sum, entry) => sum + entry.frameBytes, 0);
  expect(progressBytes).toBeLessThanOrEqual(progressBudget(toolResultBudget(maxOutputBytes)));
  expect(exchange.notifications.length).toBeGreaterThan(1);
  expect(exchange.notifications.at(-1)?.message.params.message).toBe(LIVE_OUTPUT_STOPPED);
  expectIncreasingProgress(exchange);
  expect(exchange.response.error).toBeUndefined();
  expect(resultOf(exchange).truncated).toBe(true);
}

describe.each(MCP_ERAS)('floods with live output: $name', (era) => {
  it.each(FLOODS)(
    '%s: every response within the bound, the result truncated, CPU and memory bounded',
    async (label, command, maxGrowthMiB) => {
      const measured = await measure(() => exec(era, command, { userId: 'flood' }));
      expectBoundedFlood(measured.value, MIB);
      console.log(
        `[${era.kind}] ${label}: ${measured.value.body.length} bytes on the wire (${measured.value.notifications.length} notifications), service CPU ${measured.cpuMs.toFixed(0)} ms, RSS +${measured.rssGrowthMiB.toFixed(1)} MiB`,
      );
      expect(measured.rssGrowthMiB).toBeLessThan(maxGrowthMiB);
    },
  );

  it('costs about what the same flood costs without a token', async () => {
    const command = FLOODS[0][1];
    const without = await measure(() => exec(era, command, { token: null, userId: 'flood' }));
    const withToken = await measure(() => exec(era, command, { userId: 'flood' }));
    console.log(
      `[${era.kind}] 200 MB flood, service CPU and RSS growth: ${without.cpuMs.toFixed(0)} ms, +${without.rssGrowthMiB.toFixed(1)} MiB without a token; ${withToken.cpuMs.toFixed(0)} ms, +${withToken.rssGrowthMiB.toFixed(1)} MiB with one`,
    );
    expect(withToken.cpuMs).toBeLessThan(without.cpuMs * 1.5 + 300);
  });
});

describe.each(MCP_ERAS)('redaction of live output: $name', (era) => {
  it('never shows an operator pattern written in two parts across notifications', async () => {
    const exchange = await exec(era, "printf '%0300d token internal-tok' 0; sleep 0.6; printf 'en-12345 end\\n'");
    const [first] = exchange.notifications;
    // Something went out before the secret's second part was written: it spans two pieces.
    expect(first?.message.params.message).toMatch(/^0+$/);
    expect(exchange.notifications.length).toBeGreaterThanOrEqual(2);
    expect(liveOutput(exchange.notifications, 'stdout')).toBe(`${'0'.repeat(300)} token [redacted] end\n`);
    const wire = exchange.body.toString('utf8');
    expect(wire).not.toMatch(/internal-tok|en-12345/);
    expect(resultOf(exchange).stdout).toBe(`${'0'.repeat(300)} token [redacted] end\n`);
  });

  it('never shows the caller’s agent key written in two parts across notifications', async () => {
    const [head, tail] = [fixture.key.slice(0, 20), fixture.key.slice(20)];
    const exchange = await exec(era, `printf '%0300d key=${head}' 0; sleep 0.6; printf '${tail}.\\n'`);
    expect(exchange.notifications[0]?.message.params.message).toMatch(/^0+$/);
    expect(liveOutput(exchange.notifications, 'stdout')).toBe(`${'0'.repeat(300)} key=[redacted].\n`);
    const wire = exchange.body.toString('utf8');
    expect(wire).not.toContain(head);
    expect(wire).not.toContain(tail);
  });

  it('refuses a progress token too long to echo within the bound', async () => {
    const request = withProgressToken(era.call('sandbox_exec', { command: 'true' }), 'p'.repeat(300));
    const exchange = await exchangeMcp(service, fixture.key, request, { userId: 'alice' });
    expect(exchange.status).toBe(400);
    expect(exchange.response.error).toEqual({
      code: -32600,
      message: 'Invalid request: the progress token may be at most 256 bytes of JSON.',
    });
  });
});

describe('live output under a lowered output limit, one call at a time per workspace', () => {
  const maxOutputBytes = 16_384;
  let lowered: TestService;
  let key: string;

  beforeAll(async () => {
    lowered = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_SANDBOX_MAX_OUTPUT_BYTES: String(maxOutputBytes),
        MORDN_SANDBOX_MAX_CONCURRENT_CALLS: '1',
      },
    });
    key = (await createAgentFixture(lowered.database.db, { published: ENABLED })).key;
  });
  afterAll(() => lowered?.close());

  it.each(MCP_ERAS)('keeps progress to an eighth of the budget and the whole body within it ($name)', async (era) => {
    const exchange = await exec(era, FLOODS[1][1], { target: lowered, key });
    expectBoundedFlood(exchange, maxOutputBytes);
    expect(exchange.body.length).toBeGreaterThan(maxOutputBytes - 1024);
  });

  it.each(MCP_ERAS)('answers 429 to a call asking for live output while the workspace is busy ($name)', async (era) => {
    const first = exec(era, 'sleep 1; echo done', { target: lowered, key, userId: 'busy' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await exec(era, 'echo no', { target: lowered, key, userId: 'busy' });
    expect(second.status).toBe(429);
    expect(second.contentType).toMatch(/^application\/problem\+json/);
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(liveOutput(answered.notifications, 'stdout')).toBe('done\n');
  });

  it.each(MCP_ERAS)('still streams a slow command whole when it fits ($name)', async (era) => {
    const exchange = await exec(era, 'for i in 1 2 3; do echo line-$i; sleep 0.3; done', { target: lowered, key });
    expect(liveOutput(exchange.notifications, 'stdout')).toBe('line-1\nline-2\nline-3\n');
    expect(exchange.notifications).toHaveLength(3);
  });
});

describe('a real client that cancels while output streams', () => {
  it('kills the command (SDK v2 client, 2026-07-28)', async () => {
    const era = MCP_ERAS.find((candidate) => candidate.kind === 'modern') as McpEra;
    const client = await era.connect(`${service.url}/v1/sandbox/mcp`, agentHeaders(fixture.key, 'carol'));
    const probe = `abort-probe-${randomUUID()}`;
    try {
      const controller = new AbortController();
      const call = client.callTool(
        'sandbox_exec',
        { command: `: ${probe}; for i in $(seq 1 40); do echo tick-$i; sleep 0.1; done; touch ${probe}` },
        { signal: controller.signal, onprogress: () => controller.abort() },
      );
      await expect(call).rejects.toThrow();
      const left = await pollUntil(
        () => hostProcesses(probe),
        (pids) => pids.length === 0,
        { timeoutMs: 3_000 },
      );
      expect(left).toEqual([]);
      const after = await client.callTool('sandbox_exec', { command: `ls ${probe} 2>&1; true` });
      expect(after.value.stdout).toMatch(/No such file/);
    } finally {
      await client.close();
    }
  });
});
