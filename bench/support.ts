import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { procStatFields } from '../src/proc-stat.js';

const benchDirectory = path.dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);
const PIN_CORES = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;

export interface BenchServer {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `bench/servers/<name>.ts` in its own process on core 0 (see `startBenchProcess`), so the
 * load generator and the server do not share a core, and waits for the `{"port":…}` line it prints.
 */
export function startBenchServer(name: string, environment: Record<string, string> = {}): Promise<BenchServer> {
  return startBenchProcess(name, { environment });
}

export interface LoadResult {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  errors: number;
}

let wrkAvailable: boolean | undefined;

/** Whether `wrk` (Debian package `wrk`) is installed; it loads a server with far less CPU than Node can. */
export async function hasWrk(): Promise<boolean> {
  if (wrkAvailable === undefined) {
    wrkAvailable = await run('wrk', ['--version']).then(
      () => true,
      (error: { stdout?: string }) => Boolean(error.stdout?.includes('wrk')),
    );
  }
  return wrkAvailable;
}

async function runWrk(url: string, seconds: number, connections: number): Promise<LoadResult> {
  const wrk = ['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url];
  const command = PIN_CORES ? ['taskset', '-c', '1', ...wrk] : wrk;
  const { stdout } = await run(command[0] as string, command.slice(1));
  const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? Number.NaN);
  const latency = (percentile: string) => {
    const match = new RegExp(`${percentile}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout);
    if (!match) return Number.NaN;
    const value = Number(match[1]);
    return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
  };
  const non2xx = number(/Non-2xx or 3xx responses: (\d+)/);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  return {
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    latencyP50Ms: latency('50'),
    latencyP99Ms: latency('99'),
    errors:
      (Number.isNaN(non2xx) ? 0 : non2xx) +
      (socketErrors ? socketErrors.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0),
  };
}

/** Loads `url` for `seconds` with wrk (a C load generator: it leaves the server's core alone). */
export async function runLoad(url: string, options: { seconds: number; connections: number }): Promise<LoadResult> {
  if (!(await hasWrk())) throw new Error('Benchmarks need wrk: apt-get install wrk');
  return runWrk(url, options.seconds, options.connections);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The `fraction` quantile (nearest rank) of `values`, e.g. 0.9 for p90. */
export function quantile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';

async function adminJson(base: string, method: string, pathname: string, body?: unknown) {
  const response = await fetch(`${base}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as Record<string, string>;
}

/** A tenant and an agent (sandboxes published on or off) with a read+write key, via the admin API. */
export async function provisionAgent(base: string, sandboxEnabled: boolean): Promise<string> {
  const tenant = await adminJson(base, 'POST', '/v1/admin/tenants', { name: 'bench' });
  const agent = await adminJson(base, 'POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'bench' });
  await adminJson(base, 'PUT', `/v1/admin/agents/${agent.id}/config`, {
    schemaVersion: 1,
    runtime: { sandbox: { enabled: sandboxEnabled } },
  });
  await adminJson(base, 'POST', `/v1/admin/agents/${agent.id}/config/publish`);
  return (await adminJson(base, 'POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] }))
    .key as string;
}

export interface BenchProcessOptions {
  /** Added to this process's environment. */
  environment?: Record<string, string>;
  /** Node flags before `--import tsx`, e.g. `--expose-gc` for a server that answers heap-after-GC. */
  nodeFlags?: string[];
  /** The core to pin the process to (when this machine has two and `taskset` works); 0 by default. */
  core?: number;
}

/**
 * Starts `bench/servers/<name>.ts` with these Node flags, pinned to a core (servers on core 0, the
 * load generator on core 1: neither steals the other's core, which otherwise makes single runs
 * swing by ±20 %), waits for its `{"port":…}` line, and stops it with SIGTERM first, so a server
 * can clean up (unmount workspace filesystems), then SIGKILL after 10 s.
 */
export function startBenchProcess(name: string, options: BenchProcessOptions = {}): Promise<BenchServer> {
  const command = [
    process.execPath,
    ...(options.nodeFlags ?? []),
    '--import',
    'tsx',
    path.join(benchDirectory, 'servers', `${name}.ts`),
  ];
  const pinned = PIN_CORES ? ['taskset', '-c', String(options.core ?? 0), ...command] : command;
  const child = spawn(pinned[0] as string, pinned.slice(1), {
    env: { ...process.env, ...options.environment },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let started = false;
    let seen = '';
    const onData = (chunk: Buffer) => {
      // Only the start-up line matters; later output (logs) is drained and dropped.
      if (started) return;
      seen = (seen + chunk.toString()).slice(-4096);
      const match = /\{"port":(\d+)\}/.exec(seen);
      if (!match) return;
      started = true;
      resolve({
        port: Number(match[1]),
        child,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            const deadline = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(deadline);
              done();
            });
            child.kill('SIGTERM');
          }),
      });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`bench process ${name} exited with ${code}: ${seen.slice(-1000)}`)));
  });
}

/**
 * Pins this process (every thread) to `core`, so a load generator running here leaves the
 * server's core alone. Does nothing where pinning is unavailable; says whether it pinned.
 */
export function pinThisProcess(core: number): boolean {
  if (!PIN_CORES) return false;
  return spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)]).status === 0;
}

let clockTicks: number | undefined;

/** CPU seconds (user + system, this process's threads, not its children) a process has used, from /proc. */
export async function processCpuSeconds(pid: number): Promise<number> {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = procStatFields(stat);
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** Resident set size and its high-water mark (KiB) of a process, from /proc. */
export async function processMemoryKiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

/** Restarts a process's RSS high-water mark (VmHWM), so a later peak is the measured span's own. */
export async function resetPeakMemory(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => undefined);
}

/** Open file descriptors of a process. */
export async function openFileDescriptors(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

/** Every live descendant of a process (children, their children, …) with its parent and command line. */
export async function descendantProcesses(
  pid: number,
): Promise<Array<{ pid: number; parent: number; command: string }>> {
  const parents = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const parent = Number(procStatFields(stat)[1]);
    if (stat !== '') parents.set(Number(name), parent);
  }
  const found: Array<{ pid: number; parent: number; command: string }> = [];
  const visit = (ancestor: number) => {
    for (const [child, parent] of parents) {
      if (parent !== ancestor) continue;
      let command = '';
      try {
        command = readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      } catch {
        continue; // it ended meanwhile
      }
      found.push({ pid: child, parent, command });
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** A structurally valid PDF of exactly `size` bytes (an upload every policy accepts). */
export function pdfBytes(size: number): Uint8Array {
  const bytes = new Uint8Array(size).fill(0x41);
  bytes.set(new TextEncoder().encode('%PDF-1.4\n%'), 0);
  const tail = new TextEncoder().encode('\n%%EOF\n');
  bytes.set(tail, size - tail.length);
  return bytes;
}

/** Open file descriptors of a process, and how many of them are sockets (connections, listeners). */
export async function openFileDescriptorKinds(pid: number): Promise<{ fds: number; sockets: number }> {
  const names = await readdir(`/proc/${pid}/fd`);
  const targets = await Promise.all(names.map((name) => readlink(`/proc/${pid}/fd/${name}`).catch(() => '')));
  return { fds: names.length, sockets: targets.filter((target) => target.startsWith('socket:')).length };
}

/**
 * `MORDN_BENCH_RESUMABLE=1`: chat turns carry `X-Chat-Resumable: 1` (answers that outlive their
 * reader); with `DATABASE_URL` set, the service runs on that PostgreSQL instead of SQLite.
 */
export const RESUMABLE_HEADERS: Record<string, string> =
  process.env.MORDN_BENCH_RESUMABLE === '1' ? { 'x-chat-resumable': '1' } : {};

/** The database and answer mode a chat bench runs with, for its heading. */
export function chatBenchSetting(): string {
  const database = process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite';
  return `${database}${process.env.MORDN_BENCH_RESUMABLE === '1' ? ', X-Chat-Resumable: 1' : ''}`;
}
