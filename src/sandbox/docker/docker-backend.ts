import { writeFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type { FinalReading, SandboxBackend } from '../backend.js';
import { DEFAULT_WORKSPACE_QUOTA, type HostLimits, prepareHostLimits, workspaceUsage } from '../limits/host-limits.js';
import { processOomCounter } from '../limits/process-oom-counter.js';
import { underSeccompFilter } from '../limits/seccomp.js';
import { fileHelperSource, type StartHelper, workspaceFileOperations } from '../runtime/file-operations.js';
import { lazily } from '../runtime/lazily.js';
import { explainLimits } from '../runtime/limit-notices.js';
import { DEFAULT_PROCESS_LIMITS, HELPER_OPEN_FILES, resolveLimits } from '../runtime/limits.js';
import { checkExecOptions, runCommand } from '../runtime/run-command.js';
import { requireWorkspaceId } from '../runtime/workspace-path.js';
import { connectSupervisor } from '../supervisor/supervisor-connection.js';
import { createSupervisorPool, type StartedSupervisor } from '../supervisor/supervisor-pool.js';
import { supervisorSource } from '../supervisor/supervisor-source.js';
import type { TunnelStream } from '../supervisor/tunnel-stream.js';
import { readContainerResources } from './container-resources.js';
import {
  type ContainerLimits,
  containerName,
  legacyVolumeName,
  SANDBOX_IMAGE_CONTRACT,
  SANDBOX_IMAGE_CONTRACT_LABEL,
  SANDBOX_UID,
  SANDBOX_USER,
  volumeName,
  WORKSPACE_LABEL,
  WORKSPACE_MOUNT,
  type WorkspaceMount,
  workspaceContainer,
} from './container-spec.js';
import { createEngineApi, type EngineApi, EngineApiError } from './engine-api.js';
import { demultiplex, stdinOf } from './exec-stream.js';

export type { ContainerLimits } from './container-spec.js';

export interface DockerBackendOptions {
  /**
   * Receives each connection sandboxed code opens to its way out (the supervisor's proxy
   * listener), with its workspace: the egress proxy. Without it every such connection is closed.
   */
  onTunnel?: (workspaceId: string, tunnel: TunnelStream) => void;
  /** `unix:///var/run/docker.sock` (default) or `tcp://host:port` of a socket proxy. */
  host?: string;
  /** The sandbox image (see `sandbox-image/`); it must exist on the Docker host. */
  image: string;
  limits?: Partial<ContainerLimits>;
  /** A workspace container with no call for this long is stopped; its volume stays. Default 5 min. */
  idleMs?: number;
  /** A ready Engine API client (tests and benchmarks share one); built from `host` otherwise. */
  api?: EngineApi;
  /** The OCI runtime of workspace containers: `runc` (default) or gVisor's `runsc`. */
  runtime?: 'runc' | 'runsc';
  /**
   * Host directory of the workspaces' own filesystems (the disk quota). The Docker daemon must
   * run on this host to bind them; without it (or with weak limits where the host cannot make
   * them) workspaces are named volumes with no enforced size.
   */
  workspacesDir?: string;
  quota?: { maxBytes: number; maxFiles: number };
  /** Run where the host cannot make quota filesystems, with an after-the-fact quota check. */
  weakLimits?: boolean;
  /** Gets the container's last stats before this process stops or removes it (see `FinalReading`). */
  onFinalReading?: FinalReading;
}

/** The shared process limits and 1 CPU. */
export const DEFAULT_CONTAINER_LIMITS: Readonly<ContainerLimits> = { ...DEFAULT_PROCESS_LIMITS, cpus: 1 };

const DEFAULT_IDLE_MS = 5 * 60_000;
/** CPU seconds granted beyond an exec's wall-clock timeout, and of one file operation. */
const CPU_GRACE_SECONDS = 5;
const HELPER_CPU_SECONDS = 120;
const READY_TIMEOUT_MS = 15_000;
/** How much of what a supervisor that failed to start wrote to stderr is kept for the message. */
const STARTUP_ERROR_BYTES = 4096;
/** See `workspace-sandbox.ts` (bwrap) for why -999 and not -1000. */
const SUPERVISOR_OOM_SCORE_ADJ = '-999';
/** How often an exec's exit status is asked for while the daemon is still recording it. */
const EXIT_POLL_MS = 20;
const EXIT_POLL_ATTEMPTS = 50;
/** How long a start waits for a container another replica is still creating. */
const START_RETRY_MS = 50;
const START_ATTEMPTS = 40;

interface ContainerState {
  Running?: boolean;
}
interface ContainerInspect {
  Config?: { Image?: string; Labels?: Record<string, string> };
  HostConfig?: { Runtime?: string; Mounts?: Array<{ Type?: string; Source?: string }> };
  State?: ContainerState;
  ExecIDs?: string[] | null;
}
interface ExecInspect {
  Running?: boolean;
  ExitCode?: number | null;
  Pid?: number;
}

function isStatus(error: unknown, ...statuses: number[]): boolean {
  return error instanceof EngineApiError && statuses.includes(error.status);
}

/**
 * The container sandbox backend: one container per workspace, driven through the Docker Engine
 * API (never the docker CLI). See `workspaceContainer` for exactly what a container gets.
 *
 * - A workspace is its own filesystem (`limits/quota-filesystem.ts`, bound at /workspace: the
 *   disk quota holds whatever the command does) and one container, both created by
 *   `ensureWorkspace`. The container's memory, CPU and pids limits hold for all its processes
 *   together. With weak limits on a host without quota filesystems, an opaque named volume.
 * - The container runs the supervisor (`supervisor.py`, the same as bwrap's) as one long-lived
 *   exec; every command and file operation is forked by it under its own reaper, so a timeout
 *   or abort kills exactly that call's processes, however they detached, and nothing else.
 * - After `idleMs` without commands the supervisor ends and the container is stopped (files
 *   stay); the next call starts both again. A supervisor that died is replaced on the next call.
 * - `runtime: 'runsc'` runs the containers under gVisor.
 *
 * @example
 * const backend = createDockerBackend({ image: 'mordn-sandbox:latest' });
 * await backend.probe();
 * await backend.ensureWorkspace('ws_0123');
 * const result = await backend.exec('ws_0123', { command: 'python3 -V', timeoutMs: 10_000, maxOutputBytes: 65_536 });
 */
export function createDockerBackend(options: DockerBackendOptions): SandboxBackend {
  const host = options.host ?? 'unix:///var/run/docker.sock';
  const api = options.api ?? createEngineApi(host);
  const { image } = options;
  const runtime = options.runtime ?? 'runc';
  const limits = resolveLimits(DEFAULT_CONTAINER_LIMITS, options.limits, ['cpus']);
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const { workspacesDir } = options;
  let hostPrepared = false;
  const hostLimits = lazily<HostLimits>(() => {
    hostPrepared = true;
    if (workspacesDir !== undefined) {
      return prepareHostLimits({
        workspacesDir,
        quota: options.quota ?? DEFAULT_WORKSPACE_QUOTA,
        owner: { uid: SANDBOX_UID, gid: SANDBOX_UID },
        cgroups: false,
        weakLimits: options.weakLimits ?? false,
      });
    }
    // Weak limits without a workspaces directory: workspaces are volumes of unenforced size.
    if (options.weakLimits) return Promise.resolve({});
    return Promise.reject(new Error('the workspace disk quota needs workspacesDir (a directory on the Docker host)'));
  });
  /** In-flight starts per workspace, so concurrent first calls create and start once. */
  const starting = new Map<string, Promise<void>>();
  const idleTimers = new Map<string, NodeJS.Timeout>();
  /** Workspaces whose container this process started and has not seen stop since. */
  const ready = new Set<string>();

  /** The container's state; undefined when there is none. */
  const inspect = async (workspaceId: string) => {
    const path = `/containers/${containerName(workspaceId)}/json`;
    const { status, body } = await api.call<ContainerInspect>({ method: 'GET', path, accept: [404] });
    return status === 404 ? undefined : body;
  };

  /** Removes the container, whatever it runs; a missing one (404) is fine. */
  const removeContainer = (workspaceId: string) =>
    api.call({ method: 'DELETE', path: `/containers/${containerName(workspaceId)}?force=true`, accept: [404] });

  /** The container's stats, read just before it stops: a stopped container reports none. */
  const finalReading = async (workspaceId: string) => {
    const { onFinalReading } = options;
    if (!onFinalReading) return;
    const resources = await readContainerResources(api, containerName(workspaceId)).catch(() => undefined);
    if (resources) await onFinalReading(workspaceId, resources).catch(() => undefined);
  };

  /** Workspace ids of the running workspace containers on the daemon (any replica's). */
  const listRunning = async (): Promise<string[]> => {
    const filters = encodeURIComponent(JSON.stringify({ label: [WORKSPACE_LABEL], status: ['running'] }));
    const { body } = await api.call<Array<{ Labels?: Record<string, string> }>>({
      method: 'GET',
      path: `/containers/json?filters=${filters}`,
    });
    return (body ?? []).flatMap((container) => container.Labels?.[WORKSPACE_LABEL] ?? []);
  };

  /** The workspace's files: its mounted filesystem, or (weak limits) its volume. */
  const workspaceMount = async (workspaceId: string): Promise<WorkspaceMount> => {
    const { quota } = await hostLimits();
    if (!quota) return { type: 'volume' };
    return { type: 'bind', source: await quota.ensure(workspaceId) };
  };

  /** Whether an existing container was made as this process would make it now. */
  const current = (container: ContainerInspect, mount: WorkspaceMount) => {
    const mounts = container.HostConfig?.Mounts ?? [];
    const mounted =
      mount.type === 'bind'
        ? mounts[0]?.Type === 'bind' && mounts[0]?.Source === mount.source
        : mounts[0]?.Type === 'volume';
    const containerRuntime = container.HostConfig?.Runtime || 'runc';
    return container.Config?.Image === image && containerRuntime === runtime && mounted;
  };

  /** Creates the container; false when one of that name exists already (maybe from another replica). */
  const create = async (workspaceId: string, mount: WorkspaceMount): Promise<boolean> => {
    try {
      await api.call({
        method: 'POST',
        path: `/containers/create?name=${containerName(workspaceId)}`,
        body: workspaceContainer(workspaceId, image, limits, { mount, runtime }),
      });
      return true;
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      return false;
    }
  };

  /**
   * Creates and starts the workspace's container. One that exists is started as it is, or
   * re-created first when it is stopped and was made differently (another image, runtime or mount).
   */
  /**
   * A workspace of the earlier layout lives in the volume `mordn-<id>`: its files are copied into
   * the workspace's filesystem by a one-off container of the same image and user (so nothing of
   * it is read by the host), then the volume goes. A copy that fails keeps the volume.
   */
  const migrateLegacyVolume = async (workspaceId: string, mount: WorkspaceMount) => {
    const legacy = legacyVolumeName(workspaceId);
    const found = await api.call({ method: 'GET', path: `/volumes/${legacy}`, accept: [404] });
    if (found.status === 404 || mount.type !== 'bind') return;
    // The old container holds the volume: it goes first (it is re-created with the new mount).
    await removeContainer(workspaceId);
    const name = `${containerName(workspaceId)}-migrate`;
    await api.call({ method: 'DELETE', path: `/containers/${name}?force=true`, accept: [404] });
    const spec = workspaceContainer(workspaceId, image, limits, { mount, runtime });
    await api.call({
      method: 'POST',
      path: `/containers/create?name=${name}`,
      body: {
        ...spec,
        Entrypoint: ['/bin/sh'],
        Cmd: ['-c', `cp -a /mordn-legacy/. ${WORKSPACE_MOUNT}/`],
        HostConfig: {
          ...spec.HostConfig,
          Mounts: [
            ...spec.HostConfig.Mounts,
            { Type: 'volume', Source: legacy, Target: '/mordn-legacy', ReadOnly: true },
          ],
        },
      },
    });
    try {
      await api.call({ method: 'POST', path: `/containers/${name}/start` });
      const { body } = await api.call<{ StatusCode?: number }>({ method: 'POST', path: `/containers/${name}/wait` });
      if (body?.StatusCode !== 0) {
        throw new Error(`Workspace ${workspaceId} could not be moved from its volume (cp exited ${body?.StatusCode}).`);
      }
    } finally {
      await api.call({ method: 'DELETE', path: `/containers/${name}?force=true`, accept: [404] });
    }
    await api.call({ method: 'DELETE', path: `/volumes/${legacy}`, accept: [404] });
  };

  const start = async (workspaceId: string) => {
    const mount = await workspaceMount(workspaceId);
    await migrateLegacyVolume(workspaceId, mount);
    if (mount.type === 'volume') {
      await api.call({
        method: 'POST',
        path: '/volumes/create',
        body: { Name: volumeName(workspaceId), Labels: { [WORKSPACE_LABEL]: workspaceId } },
      });
    }
    if (!(await create(workspaceId, mount))) {
      const container = await inspect(workspaceId);
      if (container?.State?.Running && current(container, mount)) return;
      if (container && !current(container, mount)) {
        await removeContainer(workspaceId);
        await create(workspaceId, mount);
      }
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        await api.call({ method: 'POST', path: `/containers/${containerName(workspaceId)}/start`, accept: [304] });
        return;
      } catch (error) {
        // Another replica's create holds the name but has not registered the container yet.
        if (!isStatus(error, 404) || attempt >= START_ATTEMPTS) throw error;
        await delay(START_RETRY_MS);
      }
    }
  };

  const ensureRunning = (workspaceId: string): Promise<void> => {
    const pending = starting.get(workspaceId);
    if (pending) return pending;
    const started = start(workspaceId)
      .then(() => {
        ready.add(workspaceId);
      })
      .finally(() => starting.delete(workspaceId));
    starting.set(workspaceId, started);
    return started;
  };

  /** Stops an idle container unless an exec (this replica's or another's) still runs in it. */
  const stopIfIdle = async (workspaceId: string) => {
    clearTimeout(idleTimers.get(workspaceId));
    idleTimers.delete(workspaceId);
    ready.delete(workspaceId);
    const container = await inspect(workspaceId);
    if (!container?.State?.Running) return;
    for (const execId of container.ExecIDs ?? []) {
      const exec = await api.call<ExecInspect>({ method: 'GET', path: `/exec/${execId}/json` }).catch(() => undefined);
      if (exec?.body?.Running) return touch(workspaceId);
    }
    await finalReading(workspaceId);
    await api.call({ method: 'POST', path: `/containers/${containerName(workspaceId)}/stop?t=0`, accept: [304] });
  };

  /** An idle timer for a container this process does not supervise (adopted, or a peer's). */
  const touch = (workspaceId: string) => {
    clearTimeout(idleTimers.get(workspaceId));
    const timer = setTimeout(() => {
      stopIfIdle(workspaceId).catch(() => undefined);
    }, idleMs);
    timer.unref();
    idleTimers.set(workspaceId, timer);
  };

  /**
   * Containers left running by an earlier process (a restart, another replica that went away)
   * get an idle timer here too, so none runs forever.
   */
  let adopted = false;
  const adoptRunning = async () => {
    for (const workspaceId of await listRunning()) {
      if (!idleTimers.has(workspaceId)) touch(workspaceId);
    }
  };

  /** Kills every process of the workspace and returns once the container has stopped. */
  const kill = async (workspaceId: string) => {
    ready.delete(workspaceId);
    const name = containerName(workspaceId);
    await finalReading(workspaceId);
    // Already stopped (409) or gone (404): nothing is left running.
    const { status } = await api.call({
      method: 'POST',
      path: `/containers/${name}/kill?signal=KILL`,
      accept: [404, 409],
    });
    if (status < 300)
      await api.call({ method: 'POST', path: `/containers/${name}/wait?condition=not-running`, accept: [404] });
  };

  /** Waits (bounded) for an exec's process to end. */
  const execRunning = async (execId: string): Promise<boolean> => {
    for (let attempt = 0; attempt < EXIT_POLL_ATTEMPTS; attempt += 1) {
      const { body } = await api.call<ExecInspect>({ method: 'GET', path: `/exec/${execId}/json` });
      if (!body?.Running) return false;
      await delay(EXIT_POLL_MS);
    }
    return true;
  };

  const createExec = async (workspaceId: string, command: string[]) => {
    const body = {
      Cmd: command,
      User: SANDBOX_USER,
      WorkingDir: WORKSPACE_MOUNT,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    };
    const path = `/containers/${containerName(workspaceId)}/exec`;
    try {
      return (await api.call<{ Id: string }>({ method: 'POST', path, body })).body?.Id;
    } catch (error) {
      // Not created yet (404) or stopped (409): start it, then once more.
      if (!isStatus(error, 404, 409)) throw error;
      await ensureRunning(workspaceId);
      return (await api.call<{ Id: string }>({ method: 'POST', path, body })).body?.Id;
    }
  };

  /** Creates an exec and attaches to it, starting the container (once more) when it is not running. */
  const startExec = async (workspaceId: string, command: string[]) => {
    for (let attempt = 1; ; attempt += 1) {
      const execId = await createExec(workspaceId, command);
      if (!execId) throw new Error('The Docker daemon created an exec without an id.');
      try {
        return { execId, socket: await api.hijack(`/exec/${execId}/start`, { Detach: false, Tty: false }) };
      } catch (error) {
        // Stopped between create and start (a kill, or the idle stop of another replica).
        if (attempt > 1 || !isStatus(error, 404, 409, 500)) throw error;
        await ensureRunning(workspaceId);
      }
    }
  };

  /** Starts the workspace's supervisor as a long-lived exec of its container. */
  const startSupervisor = async (workspaceId: string): Promise<StartedSupervisor> => {
    clearTimeout(idleTimers.get(workspaceId));
    idleTimers.delete(workspaceId);
    if (!ready.has(workspaceId)) await ensureRunning(workspaceId);
    const source = (await supervisorSource()).toString('utf8');
    // The supervisor runs under the same seccomp filter as bwrap's sandboxes, loaded into it
    // before it starts, on top of the runtime's own profile; every command inherits it.
    const command = await underSeccompFilter(['python3', '-I', '-S', '-c', source]);
    const { execId, socket } = await startExec(workspaceId, command);
    const { stdout, stderr } = demultiplex(socket);
    // What it says before it is ready is kept, to name why it did not start (a filter that
    // could not be loaded, say).
    let startupError = '';
    stderr.setEncoding('utf8');
    stderr.on('data', (text: string) => {
      if (startupError.length < STARTUP_ERROR_BYTES) startupError += text;
    });
    const connection = connectSupervisor({ stdin: stdinOf(socket), stdout });
    const stop = async () => {
      socket.destroy();
      // The supervisor kills its commands when its stdin ends; a container that does not let
      // it (gone wrong) is stopped instead, which ends every process in it.
      if (await execRunning(execId).catch(() => true)) await kill(workspaceId);
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      const { subreaper } = await Promise.race([
        connection.ready,
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('did not become ready')), READY_TIMEOUT_MS);
        }),
      ]);
      if (subreaper) sessionKillOnly.delete(workspaceId);
      else sessionKillOnly.add(workspaceId);
    } catch (error) {
      await stop();
      const reason = startupError.trim().split('\n').at(-1) || (error as Error).message;
      throw new Error(`The workspace supervisor could not start: ${reason}`);
    } finally {
      clearTimeout(timer);
    }
    // The daemon reports the exec's host pid; where this service shares the host, protect it
    // from the container's OOM killer (see SUPERVISOR_OOM_SCORE_ADJ).
    const { body } = await api.call<ExecInspect>({ method: 'GET', path: `/exec/${execId}/json` });
    if (body?.Pid) {
      await writeFile(`/proc/${body.Pid}/oom_score_adj`, SUPERVISOR_OOM_SCORE_ADJ).catch(() => undefined);
      const counter = await processOomCounter(body.Pid);
      if (counter) oomCounters.set(workspaceId, counter);
      else oomCounters.delete(workspaceId);
    }
    return {
      connection,
      stop: async () => {
        await stop();
        await stopIfIdle(workspaceId).catch(() => undefined);
      },
    };
  };

  const pool = createSupervisorPool({
    idleMs,
    start: startSupervisor,
    ...(options.onTunnel ? { onTunnel: options.onTunnel } : {}),
  });
  /**
   * Workspaces whose supervisor cannot make reapers child subreapers (gVisor before subreaper
   * support): a command's own session is all it can kill, so a timeout or abort stops the whole
   * container, as the only boundary that holds everything.
   */
  const sessionKillOnly = new Set<string>();
  /** The OOM-kill counter of each supervised container's memory cgroup, where this host sees it. */
  const oomCounters = new Map<string, () => Promise<number>>();

  const fileHelper = async (workspaceId: string): Promise<StartHelper> => {
    const source = (await fileHelperSource()).toString('utf8');
    return (helperArguments, { stdin }) =>
      pool.spawn(workspaceId, ['python3', '-I', '-S', '-c', source, ...helperArguments], {
        stdin,
        limits: { nofile: HELPER_OPEN_FILES, fsize: limits.fileSizeBytes, cpu: HELPER_CPU_SECONDS, core: 0 },
      });
  };
  const fileOperations = workspaceFileOperations(fileHelper);

  return {
    kind: 'docker',

    async probe() {
      await api.call({ method: 'GET', path: '/_ping' });
      await hostLimits();
      if (!adopted) {
        adopted = true;
        adoptRunning().catch(() => {
          adopted = false;
        });
      }
      let inspected: { Config?: { Labels?: Record<string, string> | null } } | undefined;
      try {
        inspected = (
          await api.call<typeof inspected>({ method: 'GET', path: `/images/${encodeURIComponent(image)}/json` })
        ).body;
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
        throw new Error(
          `The sandbox image ${image} is not on the Docker host; build it (sandbox-image/ or scripts/build-sandbox-image.sh).`,
        );
      }
      const contract = Number(inspected?.Config?.Labels?.[SANDBOX_IMAGE_CONTRACT_LABEL] ?? 0);
      if (!(contract >= SANDBOX_IMAGE_CONTRACT)) {
        throw new Error(
          `The sandbox image ${image} was built for an older version of Mordn (image contract ${contract || 'unlabelled'}, ${SANDBOX_IMAGE_CONTRACT} needed: python3-seccomp, which loads the workspace's seccomp filter); rebuild it (sandbox-image/ or scripts/build-sandbox-image.sh).`,
        );
      }
      if (runtime === 'runsc') {
        const { body } = await api.call<{ Runtimes?: Record<string, unknown> }>({ method: 'GET', path: '/info' });
        if (!body?.Runtimes?.runsc) {
          throw new Error(
            'The Docker daemon has no runsc runtime; install gVisor (runsc) and register it in daemon.json.',
          );
        }
      }
    },

    async ensureWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      if (!ready.has(workspaceId)) await ensureRunning(workspaceId);
      return { placement: `docker ${host}` };
    },

    async removeWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      await pool.stop(workspaceId);
      ready.delete(workspaceId);
      clearTimeout(idleTimers.get(workspaceId));
      idleTimers.delete(workspaceId);
      await finalReading(workspaceId);
      await removeContainer(workspaceId);
      await api.call({ method: 'DELETE', path: `/volumes/${volumeName(workspaceId)}`, accept: [404] });
      const { quota } = await hostLimits();
      await quota?.remove(workspaceId);
    },

    async exec(workspaceId, execOptions) {
      requireWorkspaceId(workspaceId);
      checkExecOptions(execOptions);
      const cpuSeconds = Math.ceil(execOptions.timeoutMs / 1000) + CPU_GRACE_SECONDS;
      let oomKillsBefore: number | undefined;
      let signal: number | undefined;
      const result = await runCommand(async () => {
        const process = await pool.spawn(workspaceId, ['/bin/sh', '-c', execOptions.command], {
          stdin: false,
          ...(execOptions.environment ? { environment: execOptions.environment } : {}),
          limits: {
            nofile: limits.openFiles,
            fsize: limits.fileSizeBytes,
            cpu: cpuSeconds,
            core: 0,
            // Under gVisor the container's pids limit also counts gVisor's own threads.
            ...(runtime === 'runsc' ? { nproc: limits.processes } : {}),
          },
          beforeStart: async () => {
            oomKillsBefore = await oomCounters
              .get(workspaceId)?.()
              .catch(() => undefined);
          },
        });
        void process.exited.then((exit) => {
          signal = exit.signal;
        });
        if (!sessionKillOnly.has(workspaceId)) return process;
        let stopped: Promise<void> | undefined;
        return {
          ...process,
          exited: process.exited.then(async (exit) => {
            await stopped;
            return exit;
          }),
          kill() {
            process.kill();
            stopped ??= pool.stop(workspaceId).then(() => kill(workspaceId).catch(() => undefined));
          },
        };
      }, execOptions);
      return explainLimits(result, {
        workspaceId,
        signal,
        oomKillsBefore,
        oomKills: oomCounters.get(workspaceId),
        memoryBytes: limits.memoryBytes,
        quota: (await hostLimits()).quota,
        quotaLimits: options.quota ?? DEFAULT_WORKSPACE_QUOTA,
      });
    },

    async close() {
      await pool.stopAll();
      if (hostPrepared) await (await hostLimits().catch(() => undefined))?.quota?.close();
    },

    ...fileOperations,

    async usage(workspaceId) {
      requireWorkspaceId(workspaceId);
      return workspaceUsage((await hostLimits()).quota, workspaceId, fileOperations.usage);
    },

    async resources(workspaceId) {
      requireWorkspaceId(workspaceId);
      return readContainerResources(api, containerName(workspaceId));
    },

    runningWorkspaces: listRunning,
  };
}
