import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createLogger } from '../src/logger.js';
import type { FinalReading, SandboxBackend, WorkspaceResources } from '../src/sandbox/backend.js';
import { createBwrapBackend } from '../src/sandbox/bwrap/bwrap-backend.js';
import { containerMemoryBytes } from '../src/sandbox/docker/container-resources.js';
import { createDockerBackend } from '../src/sandbox/docker/docker-backend.js';
import { createEngineApi } from '../src/sandbox/docker/engine-api.js';
import { ensureWorkspaceRecord, recordWorkspaceUse } from '../src/sandbox/workspaces.js';
import { createAgent, createTenant } from '../src/tenancy/tenants.js';
import { createSandboxMeter, type SandboxMeter } from '../src/usage/sandbox-meter.js';
import type { UsageCounter, UsageDelta, UsageOwner, UsageSink } from '../src/usage/usage-types.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { createAgentFixture } from './support/fixtures.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { eventually, pollUntil } from './support/poll.js';
import { SANDBOX_CONTRACT_LIMITS } from './support/sandbox-backend-contract.js';
import { startTestService } from './support/service.js';
import { removeWorkspacesRoot } from './support/workspace-roots.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

const logger = createLogger({ level: 'silent' });
const GIB = 1024 ** 3;
const isRoot = process.getuid?.() === 0;

const DOCKER_HOST = process.env.MORDN_TEST_DOCKER_HOST ?? 'unix:///var/run/docker.sock';
const IMAGE = process.env.MORDN_TEST_SANDBOX_IMAGE ?? 'mordn-sandbox:latest';
const api = createEngineApi(DOCKER_HOST);
const dockerUnavailable = await api.call({ method: 'GET', path: `/images/${encodeURIComponent(IMAGE)}/json` }).then(
  () => undefined,
  (error: unknown) => `Docker at ${DOCKER_HOST} with image ${IMAGE}: ${String(error)}`,
);
if (dockerUnavailable && process.env.MORDN_TEST_DOCKER === 'require') {
  throw new Error(`MORDN_TEST_DOCKER=require, but ${dockerUnavailable}`);
}

/** A sink that keeps what it is given, as the usage ledger would add it up. */
function collectingSink() {
  const entries: Array<{ owner: UsageOwner; delta: UsageDelta; at: number | undefined }> = [];
  const sink: UsageSink = { add: (owner, delta, at) => entries.push({ owner, delta, at }) };
  const total = (counter: UsageCounter) => entries.reduce((sum, entry) => sum + (entry.delta[counter] ?? 0), 0);
  return { sink, entries, total, clear: () => entries.splice(0) };
}

/** A command that burns `seconds` of CPU and prints the CPU time its process used, as the kernel counts it. */
const busy = (seconds: number) =>
  `python3 -c "$(printf 'import time\\nt=time.process_time()\\nwhile time.process_time()-t<${seconds}: pass\\nprint(time.process_time())')"`;

const within = (actual: number, expected: number, share: number) =>
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(expected * share);

const roots: string[] = [];
let target: TestDatabaseTarget;
let database: Database;
let owner: UsageOwner;

beforeAll(async () => {
  target = await createTestDatabaseTarget();
  database = await target.open();
  const tenant = await createTenant(database.db, 'Metered');
  const agent = await createAgent(database.db, tenant.id, 'Metered agent');
  owner = { tenantId: tenant.id, agentId: agent.id, userId: 'user-1' };
});

afterAll(async () => {
  await database.close();
  await target.destroy();
  for (const root of roots) await removeWorkspacesRoot(root);
  await api.close();
});

/** A new user's workspace record (the meter bills its owner). */
async function newWorkspace(kind: string) {
  const userId = `user-${Math.random().toString(36).slice(2, 10)}`;
  const workspaceOwner = { ...owner, userId };
  return { owner: workspaceOwner, workspace: await ensureWorkspaceRecord(database.db, workspaceOwner, kind) };
}

async function workspacesDir(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'mordn-metering-'));
  roots.push(root);
  return path.join(root, 'workspaces');
}

type MakeBackend = (options: { idleMs?: number; onFinalReading: FinalReading }) => Promise<SandboxBackend>;

const BACKENDS: Array<{ kind: 'bwrap' | 'docker'; skip: string | undefined; make: MakeBackend }> = [
  {
    kind: 'bwrap',
    skip: isRoot ? undefined : 'workspace cgroups need root',
    make: async (options) =>
      createBwrapBackend({ workspacesDir: await workspacesDir(), limits: SANDBOX_CONTRACT_LIMITS, ...options }),
  },
  {
    kind: 'docker',
    skip: dockerUnavailable,
    make: async (options) =>
      createDockerBackend({
        host: DOCKER_HOST,
        image: IMAGE,
        limits: SANDBOX_CONTRACT_LIMITS,
        workspacesDir: await workspacesDir(),
        quota: { maxBytes: 256 * 1024 ** 2, maxFiles: 20_000 },
        ...options,
      }),
  },
];

describe.each(BACKENDS)('sandbox metering on $kind', ({ kind, skip, make }) => {
  const created: Array<{ backend: SandboxBackend; workspaceIds: string[] }> = [];
  const collected = collectingSink();
  let meter: SandboxMeter;
  let backend: SandboxBackend | undefined;

  /**
   * A workspace of a new user, started: on the suite's backend, or (with `idleMs`) on a backend of
   * its own whose last readings go to `meter()`.
   */
  async function started(options: { idleMs?: number; meter?: () => SandboxMeter } = {}) {
    const { owner: workspaceOwner, workspace } = await newWorkspace(kind);
    const made =
      options.idleMs === undefined && backend
        ? backend
        : await make({
            ...(options.idleMs ? { idleMs: options.idleMs } : {}),
            onFinalReading: (workspaceId, resources) =>
              (options.meter?.() ?? meter).billReading(workspaceId, resources),
          });
    created.push({ backend: made, workspaceIds: [workspace.id] });
    await made.ensureWorkspace(workspace.id);
    return { backend: made, workspace, owner: workspaceOwner };
  }

  const exec = (on: SandboxBackend, workspaceId: string, command: string) =>
    on.exec(workspaceId, { command, timeoutMs: 30_000, maxOutputBytes: 65_536 });

  beforeAll(async () => {
    if (skip) return;
    backend = await make({ onFinalReading: (workspaceId, resources) => meter.billReading(workspaceId, resources) });
    meter = createSandboxMeter({ db: database.db, backend, sink: collected.sink, logger, sampleSeconds: 60 });
  });

  afterAll(async () => {
    for (const { backend: made, workspaceIds } of created) {
      for (const workspaceId of workspaceIds) await made.removeWorkspace(workspaceId).catch(() => undefined);
    }
    for (const made of new Set([backend, ...created.map((each) => each.backend)])) await made?.close?.();
  });

  it.skipIf(skip !== undefined)(
    'bills a CPU-bound command within 20 % of the CPU time the kernel counted for it',
    async () => {
      const { backend: on, workspace, owner: workspaceOwner } = await started();
      await exec(on, workspace.id, 'true');
      meter.afterCall(workspace.id);
      await meter.flush();
      collected.clear();

      const result = await exec(on, workspace.id, busy(1.5));
      expect(result.exitCode).toBe(0);
      const processCpu = Number(result.stdout.trim());
      expect(processCpu).toBeGreaterThanOrEqual(1.5);
      meter.afterCall(workspace.id);
      await meter.flush();
      const billed = collected.total('sandboxCpuSeconds');
      within(billed, processCpu, 0.2);
      // The reaper's rusage of the command: the same process tree, counted by the host.
      expect(result.cpuSeconds).toBeDefined();
      within(result.cpuSeconds ?? 0, processCpu, 0.2);
      expect(collected.entries.every((entry) => entry.owner.userId === workspaceOwner.userId)).toBe(true);
    },
    60_000,
  );

  it.skipIf(skip !== undefined)(
    'reads a busy workspace at most once per interval after its calls, and the next reading bills the rest',
    async () => {
      const { backend: on, workspace } = await started();
      let clock = 1_000_000;
      const throttled = createSandboxMeter({
        db: database.db,
        backend: on,
        sink: collected.sink,
        logger,
        sampleSeconds: 60,
        callReadingIntervalMs: 2_000,
        now: () => clock,
      });
      throttled.afterCall(workspace.id);
      await throttled.flush();
      collected.clear();
      await exec(on, workspace.id, busy(0.5));
      clock += 1_000;
      throttled.afterCall(workspace.id);
      await throttled.flush();
      // Within the interval: not read, nothing billed yet.
      expect(collected.total('sandboxCpuSeconds')).toBe(0);
      clock += 1_500;
      throttled.afterCall(workspace.id);
      await throttled.flush();
      expect(collected.total('sandboxCpuSeconds')).toBeGreaterThanOrEqual(0.5 * 0.8);
    },
    60_000,
  );

  it.skipIf(skip !== undefined)(
    'bills the CPU of a process a command left running in the background',
    async () => {
      const { backend: on, workspace } = await started();
      meter.afterCall(workspace.id);
      await meter.flush();
      collected.clear();
      // The shell returns once its orphan has burned 1 s of CPU; the orphan burns on until the
      // call's processes are ended.
      const orphan = `python3 -c "$(printf 'import time\\nt=time.process_time()\\nwhile time.process_time()-t<1: pass\\nopen("/tmp/burned","w").close()\\nwhile True: pass')"`;
      const result = await exec(
        on,
        workspace.id,
        `rm -f /tmp/burned; (setsid ${orphan} >/dev/null 2>&1 &) ; while [ ! -e /tmp/burned ]; do sleep 0.05; done; echo started`,
      );
      expect(result.stdout).toBe('started\n');
      meter.afterCall(workspace.id);
      await meter.flush();
      // The shell itself used next to nothing: what was billed is the orphan's.
      expect(collected.total('sandboxCpuSeconds')).toBeGreaterThanOrEqual(1);
      expect(collected.total('sandboxCpuSeconds')).toBeLessThan(1.8);
      // The reaper waited for the orphan it killed: the command's own figure counts it too.
      expect(result.cpuSeconds).toBeGreaterThanOrEqual(1);
    },
    60_000,
  );

  it.skipIf(skip !== undefined)(
    'two replicas billing the same workspace at once bill the counter exactly once',
    async () => {
      const { backend: on, workspace } = await started();
      const second = await target.open();
      try {
        const sinks = [collectingSink(), collectingSink()];
        const meters = [
          createSandboxMeter({
            db: database.db,
            backend: on,
            sink: sinks[0]?.sink as UsageSink,
            logger,
            sampleSeconds: 60,
          }),
          createSandboxMeter({
            db: second.db,
            backend: on,
            sink: sinks[1]?.sink as UsageSink,
            logger,
            sampleSeconds: 60,
          }),
        ];
        const running = exec(on, workspace.id, busy(1.5));
        let done = false;
        void running.finally(() => {
          done = true;
        });
        const read = async () => (await on.resources?.(workspace.id)) as WorkspaceResources;
        /** The first reading past `seconds` of CPU (the command is burning it; its sandbox may be starting). */
        const readPast = async (seconds: number) =>
          (await pollUntil(
            () => on.resources?.(workspace.id),
            (reading) => (reading?.cpuSeconds ?? 0) > seconds,
            { timeoutMs: 10_000 },
          )) as WorkspaceResources;
        // Each replica first bills a reading of its own, the second a later one, so both have
        // billed whichever wins the races below.
        const first = await readPast(0.05);
        await meters[0]?.billReading(workspace.id, first);
        await meters[1]?.billReading(workspace.id, await readPast(first.cpuSeconds + 0.05));
        expect(sinks.map((each) => each.entries.length)).toEqual([1, 1]);
        while (!done) {
          for (const each of meters) each.afterCall(workspace.id);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect((await running).exitCode).toBe(0);
        for (const each of meters) each.afterCall(workspace.id);
        await Promise.all(meters.map((each) => each.flush()));
        // One reading past all billed, offered to both at once, is billed by one of them only.
        await exec(on, workspace.id, busy(0.2));
        const last = await read();
        const entries = () => sinks.reduce((sum, each) => sum + each.entries.length, 0);
        const entriesBefore = entries();
        await Promise.all(meters.map((each) => each.billReading(workspace.id, last)));
        expect(entries()).toBe(entriesBefore + 1);
        const billed = (sinks[0]?.total('sandboxCpuSeconds') ?? 0) + (sinks[1]?.total('sandboxCpuSeconds') ?? 0);
        const stored = await database.db
          .selectFrom('workspaces')
          .select(['meter_cpu_micros', 'meter_instance'])
          .where('id', '=', workspace.id)
          .executeTakeFirstOrThrow();
        // Together the two billed exactly what the counter said last, no more.
        expect(billed).toBeCloseTo(Number(stored.meter_cpu_micros) / 1e6, 5);
        expect(stored.meter_instance).toBe(last.instance);
        expect(Number(stored.meter_cpu_micros)).toBe(Math.round(last.cpuSeconds * 1e6));
        expect(billed).toBeGreaterThan(1.6);
      } finally {
        await second.close();
      }
    },
    60_000,
  );

  it.skipIf(skip !== undefined)(
    'reads the last seconds before an idle stop, and bills a sandbox made again from zero',
    async () => {
      const sink = collectingSink();
      let idleMeter: SandboxMeter | undefined;
      const { backend: idle, workspace } = await started({ idleMs: 1_500, meter: () => idleMeter as SandboxMeter });
      idleMeter = createSandboxMeter({ db: database.db, backend: idle, sink: sink.sink, logger, sampleSeconds: 60 });
      // What starting the sandbox used is billed first, so the rest is the command's.
      await exec(idle, workspace.id, 'true');
      await idleMeter.billReading(workspace.id, (await idle.resources?.(workspace.id)) as WorkspaceResources);
      sink.clear();
      const first = await exec(idle, workspace.id, busy(0.8));
      const before = (await idle.resources?.(workspace.id)) as WorkspaceResources;
      expect(before.cpuSeconds).toBeGreaterThanOrEqual(0.8);
      // No call is metered: only the reading taken as the sandbox stops can bill this.
      await eventually(async () => (await idle.resources?.(workspace.id)) === undefined, { timeoutMs: 20_000 });
      await eventually(() => sink.total('sandboxCpuSeconds') >= before.cpuSeconds, { timeoutMs: 5_000 });
      within(sink.total('sandboxCpuSeconds'), Number(first.stdout.trim()), 0.2);
      const billedFirst = sink.total('sandboxCpuSeconds');

      await exec(idle, workspace.id, 'true');
      const after = (await idle.resources?.(workspace.id)) as WorkspaceResources;
      expect(after.instance).not.toBe(before.instance);
      expect(after.startedAt).toBeGreaterThanOrEqual(before.startedAt);
      // Lower than the first instance's counter, yet billed in full: a new counter starts at 0.
      expect(after.cpuSeconds).toBeLessThan(before.cpuSeconds);
      await idleMeter.billReading(workspace.id, after);
      expect(sink.total('sandboxCpuSeconds') - billedFirst).toBeCloseTo(after.cpuSeconds, 5);
      // A late reading of the old instance is stale and bills nothing.
      const billedNow = sink.total('sandboxCpuSeconds');
      await idleMeter.billReading(workspace.id, { ...before, cpuSeconds: before.cpuSeconds + 5 });
      expect(sink.total('sandboxCpuSeconds')).toBe(billedNow);
    },
    90_000,
  );

  it.skipIf(skip !== undefined)('samples the memory of a running sandbox for one interval', async () => {
    const { backend: on, workspace } = await started();
    await exec(on, workspace.id, 'true');
    const sink = collectingSink();
    const sampleSeconds = 5;
    const at = Math.floor(Date.now() / 5_000) * 5_000 + 1_000;
    const sampler = createSandboxMeter({
      db: database.db,
      backend: {
        resources: (id) => on.resources?.(id) ?? Promise.resolve(undefined),
        runningWorkspaces: async () => [workspace.id],
      },
      sink: sink.sink,
      logger,
      sampleSeconds,
      now: () => at,
    });
    const reading = (await on.resources?.(workspace.id)) as WorkspaceResources;
    expect(reading.memoryBytes).toBeGreaterThan(64 * 1024);
    expect(reading.memoryBytes).toBeLessThan(SANDBOX_CONTRACT_LIMITS.memoryBytes);
    await sampler.sample();
    const gibSeconds = sink.total('sandboxMemoryGibSeconds');
    // Memory moves a little between two readings; the figure is one reading × the interval.
    within(gibSeconds, (reading.memoryBytes / GIB) * sampleSeconds, 0.5);
  });
});

describe.skipIf(!isRoot)('metering the calls of the service', () => {
  it('bills the CPU of a sandbox_exec call to its tenant, agent and user, off the result', async () => {
    const collected = collectingSink();
    const service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      usage: collected.sink,
    });
    try {
      const fixture = await createAgentFixture(service.database.db, { published: ENABLED });
      const client = await connectSdkClient(service, fixture.key, 'alice');
      try {
        await callTool(client, 'sandbox_exec', { command: 'true' });
        await service.deps.sandbox?.meter?.flush();
        collected.clear();
        // Longer than the 2 s between readings after calls: its end is read, not left to the sampler.
        const result = await callTool(client, 'sandbox_exec', { command: busy(2.2) });
        expect(result.value).toMatchObject({ exitCode: 0 });
        // CPU time is for metering and traces, not part of what the model sees.
        expect(Object.keys(result.value as object)).not.toContain('cpuSeconds');
        await service.deps.sandbox?.meter?.flush();
        const processCpu = Number((result.value as { stdout: string }).stdout.trim());
        within(collected.total('sandboxCpuSeconds'), processCpu, 0.2);
        expect(collected.entries.map((entry) => entry.owner)).toContainEqual({
          tenantId: fixture.tenantId,
          agentId: fixture.agentId,
          userId: 'alice',
        });
      } finally {
        await client.close();
      }
    } finally {
      await service.close();
    }
  }, 60_000);
});

describe('memory and disk sampling', () => {
  const known = new Map<string, WorkspaceResources>();
  const stub = {
    resources: async (workspaceId: string) => known.get(workspaceId),
    runningWorkspaces: async () => [...known.keys()],
  };

  it('bills memory GiB-seconds and disk GiB-hours once per interval, whichever replica samples first', async () => {
    const { workspace, owner: workspaceOwner } = await newWorkspace('stub');
    const { workspace: idle, owner: idleOwner } = await newWorkspace('stub');
    await recordWorkspaceUse(database.db, workspace.id, { bytes: 3 * GIB });
    await recordWorkspaceUse(database.db, idle.id, { bytes: GIB / 2 });
    known.clear();
    known.set(workspace.id, { cpuSeconds: 4, memoryBytes: GIB / 4, instance: 'one', startedAt: 1_000 });
    // One second into a 30 s interval.
    let now = 1_900_000_020_000 + 1_000;
    const second = await target.open();
    try {
      const sinks = [collectingSink(), collectingSink()];
      const [first, other] = [database, second].map((each, index) =>
        createSandboxMeter({
          db: each.db,
          backend: stub,
          sink: sinks[index]?.sink as UsageSink,
          logger,
          sampleSeconds: 30,
          now: () => now,
        }),
      ) as [SandboxMeter, SandboxMeter];
      const totals = (counter: UsageCounter, who: UsageOwner) =>
        sinks
          .flatMap((each) => each.entries)
          .filter((entry) => entry.owner.userId === who.userId)
          .reduce((sum, entry) => sum + (entry.delta[counter] ?? 0), 0);

      await Promise.all([first.sample(), other.sample()]);
      expect(totals('sandboxMemoryGibSeconds', workspaceOwner)).toBeCloseTo(0.25 * 30, 9);
      expect(totals('diskGibHours', workspaceOwner)).toBeCloseTo(3 * (30 / 3600), 9);
      expect(totals('diskGibHours', idleOwner)).toBeCloseTo(0.5 * (30 / 3600), 9);
      expect(totals('sandboxMemoryGibSeconds', idleOwner)).toBe(0);
      expect(totals('sandboxCpuSeconds', workspaceOwner)).toBe(4);

      // Later in the same interval: nothing more.
      now += 20_000;
      await Promise.all([first.sample(), other.sample()]);
      expect(totals('sandboxMemoryGibSeconds', workspaceOwner)).toBeCloseTo(7.5, 9);
      expect(totals('diskGibHours', idleOwner)).toBeCloseTo(0.5 * (30 / 3600), 9);

      // The next interval is billed again, once.
      now += 30_000;
      known.set(workspace.id, { cpuSeconds: 5, memoryBytes: GIB, instance: 'one', startedAt: 1_000 });
      await Promise.all([other.sample(), first.sample()]);
      expect(totals('sandboxMemoryGibSeconds', workspaceOwner)).toBeCloseTo(7.5 + 30, 9);
      expect(totals('diskGibHours', workspaceOwner)).toBeCloseTo(2 * 3 * (30 / 3600), 9);
      expect(totals('sandboxCpuSeconds', workspaceOwner)).toBe(5);
    } finally {
      await second.close();
    }
  });

  it('reads container memory as docker stats shows it', () => {
    expect(containerMemoryBytes({ usage: 10_000, stats: { inactive_file: 4_000 } })).toBe(6_000);
    expect(containerMemoryBytes({ usage: 10_000, stats: { total_inactive_file: 3_000 } })).toBe(7_000);
    expect(containerMemoryBytes({ usage: 10_000, stats: { inactive_file: 20_000 } })).toBe(10_000);
    expect(containerMemoryBytes(undefined)).toBe(0);
  });
});
