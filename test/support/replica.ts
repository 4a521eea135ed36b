import { expect } from 'vitest';
import { type Json, readJson } from './json.js';
import { type MordnProcess, spawnMordn } from './process.js';
import { adminRequest } from './service.js';

/** One `mordn serve` child process on a free port of 127.0.0.1, as a load balancer would see it. */
export interface ServiceReplica {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  process: MordnProcess;
  /** Sends a request to this replica over real HTTP. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** SIGTERM, then waits for the process to exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `mordn serve` with `environment` (PORT is forced to 0) and resolves once it listens. A
 * process that exits first (bad configuration, failed migration) rejects with its stderr.
 *
 * @example
 * const [a, b] = await Promise.all([startReplica(environment), startReplica(environment)]);
 */
export async function startReplica(
  environment: Record<string, string>,
  options: { timeoutMs?: number } = {},
): Promise<ServiceReplica> {
  const running = spawnMordn(['serve'], { ...environment, PORT: '0' });
  const exitedEarly = running.exited.then(({ code, signal }) => {
    throw new Error(`mordn serve exited (code ${code}, signal ${signal}) before listening: ${running.stderr.join('')}`);
  });
  const listened = running.waitForLog((line) => line.msg === 'mordn listening', options.timeoutMs ?? 30_000);
  // Both are observed by the race below; whichever loses settles later and is of no interest.
  exitedEarly.catch(() => undefined);
  listened.catch(() => undefined);
  let listening: Record<string, unknown>;
  try {
    listening = await Promise.race([listened, exitedEarly]);
  } catch (error) {
    running.child.kill('SIGKILL');
    await running.exited;
    throw error;
  }
  const url = String(listening.url);
  return {
    url,
    process: running,
    fetch: (path, init) => fetch(`${url}${path}`, init),
    stop: async () => {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGTERM');
      return running.exited;
    },
  };
}

/** An admin API request to one replica that must succeed (any 2xx); its JSON answer. */
export async function replicaAdmin(
  replica: ServiceReplica,
  method: string,
  route: string,
  body?: unknown,
): Promise<Json> {
  const response = await replica.fetch(route, adminRequest(method, body));
  expect(response.status, `${method} ${route}`).toBeLessThan(300);
  return readJson(response);
}
