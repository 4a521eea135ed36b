import type { WorkspaceResources } from '../backend.js';
import type { EngineApi } from './engine-api.js';

/** The parts of `GET /containers/{name}/stats` metering reads. */
export interface ContainerStats {
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; stats?: Record<string, number> };
}

interface ContainerState {
  Id?: string;
  State?: { Running?: boolean; StartedAt?: string };
}

/**
 * Memory as `docker stats` shows it: usage less the inactive page cache the kernel can drop at
 * once (`inactive_file` on cgroup v2, `total_inactive_file` on v1).
 *
 * @example
 * containerMemoryBytes({ usage: 10_000, stats: { inactive_file: 4_000 } }); // → 6000
 */
export function containerMemoryBytes(memory: ContainerStats['memory_stats']): number {
  const usage = memory?.usage ?? 0;
  const inactive = memory?.stats?.inactive_file ?? memory?.stats?.total_inactive_file ?? 0;
  return inactive < usage ? usage - inactive : usage;
}

/**
 * One reading of a running workspace container's own accounting (its cgroup, every process of
 * the container): a one-shot stats call, after an inspect that names the instance (container id
 * and start time: a restart resets the counters and changes the start time). Undefined when the
 * container is missing or stopped.
 *
 * @example
 * const reading = await readContainerResources(api, 'mordn-ws_0123');
 */
export async function readContainerResources(api: EngineApi, name: string): Promise<WorkspaceResources | undefined> {
  const inspected = await api.call<ContainerState>({ method: 'GET', path: `/containers/${name}/json`, accept: [404] });
  const state = inspected.body?.State;
  if (inspected.status === 404 || !state?.Running || !inspected.body?.Id || !state.StartedAt) return undefined;
  const { status, body } = await api.call<ContainerStats>({
    method: 'GET',
    path: `/containers/${name}/stats?stream=false&one-shot=true`,
    accept: [404],
  });
  const cpuNanos = body?.cpu_stats?.cpu_usage?.total_usage;
  // A container that stopped meanwhile reports no usage.
  if (status === 404 || cpuNanos === undefined || cpuNanos === 0) return undefined;
  return {
    cpuSeconds: cpuNanos / 1e9,
    memoryBytes: containerMemoryBytes(body?.memory_stats),
    instance: `${inspected.body.Id}@${state.StartedAt}`,
    startedAt: Date.parse(state.StartedAt),
  };
}
