import { setTimeout as delay } from 'node:timers/promises';
import type { SandboxBackend } from '../backend.js';
import { fileHelperSource, type StartHelper, workspaceFileOperations } from '../runtime/file-operations.js';
import { DEFAULT_PROCESS_LIMITS, resolveLimits } from '../runtime/limits.js';
import { checkExecOptions, runCommand } from '../runtime/run-command.js';
import type { SandboxExit, SandboxProcess } from '../runtime/sandbox-process.js';
import { requireWorkspaceId } from '../runtime/workspace-path.js';
import {
  type ContainerLimits,
  containerName,
  limitedCommand,
  SANDBOX_USER,
  volumeName,
  WORKSPACE_LABEL,
  WORKSPACE_MOUNT,
  workspaceContainer,
} from './container-spec.js';
import { createEngineApi, type EngineApi, EngineApiError } from './engine-api.js';
import { demultiplex, stdinOf } from './exec-stream.js';

export type { ContainerLimits } from './container-spec.js';

export interface DockerBackendOptions {
  /** `unix:///var/run/docker.sock` (default) or `tcp://host:port` of a socket proxy. */
  host?: string;
  /** The sandbox image (see `sandbox-image/`); it must exist on the Docker host. */
  image: string;
  limits?: Partial<ContainerLimits>;
  /** A workspace container with no call for this long is stopped; its volume stays. Default 5 min. */
  idleMs?: number;
  /** A ready Engine API client (tests and benchmarks share one); built from `host` otherwise. */
  api?: EngineApi;
}

/** The shared process limits and 1 CPU. */
export const DEFAULT_CONTAINER_LIMITS: Readonly<ContainerLimits> = { ...DEFAULT_PROCESS_LIMITS, cpus: 1 };

const DEFAULT_IDLE_MS = 5 * 60_000;
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
  State?: ContainerState;
  ExecIDs?: string[] | null;
}
interface ExecInspect {
  Running?: boolean;
  ExitCode?: number | null;
}

function isStatus(error: unknown, ...statuses: number[]): boolean {
  return error instanceof EngineApiError && statuses.includes(error.status);
}

/**
 * The container sandbox backend: one container per workspace, driven through the Docker Engine
 * API (never the docker CLI). See `workspaceContainer` for exactly what a container gets.
 *
 * - A workspace is a named volume and one container, both created by `ensureWorkspace`, which the
 *   service calls on a user's first tool call (nothing exists before). The container is stopped
 *   after `idleMs` without calls (the volume stays) and started again by the next one.
 * - Commands and file operations are execs in that container as the unprivileged user; file
 *   operations run the same `fileops.py` walker as bwrap, inside the container, so no host-side
 *   copy (the `docker cp` class of symlink races) exists.
 * - A timeout or abort kills the whole container, which takes every process the command started
 *   with it, however it detached. Other calls running in the same workspace at that moment end
 *   too; files are kept. Processes a command leaves in the background otherwise keep running
 *   until the container stops.
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
  const limits = resolveLimits(DEFAULT_CONTAINER_LIMITS, options.limits, ['cpus']);
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
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

  /** Creates the container; false when one of that name exists already (maybe from another replica). */
  const create = async (workspaceId: string): Promise<boolean> => {
    try {
      await api.call({
        method: 'POST',
        path: `/containers/create?name=${containerName(workspaceId)}`,
        body: workspaceContainer(workspaceId, image, limits),
      });
      return true;
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      return false;
    }
  };

  /**
   * Creates and starts the workspace's container. One that exists is started as it is, or
   * re-created first when it is stopped and was made from another image (an upgrade).
   */
  const start = async (workspaceId: string) => {
    if (!(await create(workspaceId))) {
      const container = await inspect(workspaceId);
      if (container?.State?.Running) return;
      if (container && container.Config?.Image !== image) {
        await removeContainer(workspaceId);
        await create(workspaceId);
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

  /** Stops an idle container unless an exec (from any replica) still runs in it. */
  const stopIfIdle = async (workspaceId: string) => {
    idleTimers.delete(workspaceId);
    ready.delete(workspaceId);
    const container = await inspect(workspaceId);
    if (!container?.State?.Running) return;
    for (const execId of container.ExecIDs ?? []) {
      const exec = await api.call<ExecInspect>({ method: 'GET', path: `/exec/${execId}/json` }).catch(() => undefined);
      if (exec?.body?.Running) return touch(workspaceId);
    }
    await api.call({ method: 'POST', path: `/containers/${containerName(workspaceId)}/stop?t=0`, accept: [304] });
  };

  const touch = (workspaceId: string) => {
    clearTimeout(idleTimers.get(workspaceId));
    const timer = setTimeout(() => {
      stopIfIdle(workspaceId).catch(() => undefined);
    }, idleMs);
    timer.unref();
    idleTimers.set(workspaceId, timer);
  };

  /** Kills every process of the workspace and returns once the container has stopped. */
  /**
   * Containers left running by an earlier process (a restart, another replica that went away)
   * get an idle timer here too, so none runs forever.
   */
  let adopted = false;
  const adoptRunning = async () => {
    const filters = encodeURIComponent(JSON.stringify({ label: [WORKSPACE_LABEL], status: ['running'] }));
    const { body } = await api.call<Array<{ Labels?: Record<string, string> }>>({
      method: 'GET',
      path: `/containers/json?filters=${filters}`,
    });
    for (const container of body ?? []) {
      const workspaceId = container.Labels?.[WORKSPACE_LABEL];
      if (workspaceId && !idleTimers.has(workspaceId)) touch(workspaceId);
    }
  };

  const kill = async (workspaceId: string) => {
    ready.delete(workspaceId);
    const name = containerName(workspaceId);
    // Already stopped (409) or gone (404): nothing is left running.
    const { status } = await api.call({
      method: 'POST',
      path: `/containers/${name}/kill?signal=KILL`,
      accept: [404, 409],
    });
    if (status < 300)
      await api.call({ method: 'POST', path: `/containers/${name}/wait?condition=not-running`, accept: [404] });
  };

  /** Waits (bounded) for an exec's process to end: its exit code, or `running` if it has not. */
  const waitForExec = async (execId: string): Promise<{ running: boolean; exitCode?: number }> => {
    for (let attempt = 0; attempt < EXIT_POLL_ATTEMPTS; attempt += 1) {
      const { body } = await api.call<ExecInspect>({ method: 'GET', path: `/exec/${execId}/json` });
      if (!body?.Running)
        return typeof body?.ExitCode === 'number' ? { running: false, exitCode: body.ExitCode } : { running: false };
      await delay(EXIT_POLL_MS);
    }
    return { running: true };
  };

  const createExec = async (workspaceId: string, command: string[], stdin: boolean) => {
    const body = {
      Cmd: command,
      User: SANDBOX_USER,
      WorkingDir: WORKSPACE_MOUNT,
      AttachStdin: stdin,
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
  const startExec = async (workspaceId: string, command: string[], stdin: boolean) => {
    for (let attempt = 1; ; attempt += 1) {
      const execId = await createExec(workspaceId, command, stdin);
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

  /**
   * Runs `command` as an exec in the workspace's container, as a `SandboxProcess`. Killing a
   * command kills the container (its only boundary that holds every descendant). Killing the
   * file helper, a single process that starts nothing, only closes its connection: stdin ends,
   * the helper abandons the operation (a partial write is removed) and exits; the container is
   * killed only if it does not.
   */
  const launch = async (
    workspaceId: string,
    command: string[],
    options: { stdin?: boolean; kills: 'container' | 'process' },
  ): Promise<SandboxProcess> => {
    touch(workspaceId);
    const stdin = options.stdin ?? false;
    const { execId, socket } = await startExec(workspaceId, limitedCommand(limits, command), stdin);
    const { stdout, stderr } = demultiplex(socket);
    let killing: Promise<void> | undefined;
    const closed = new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
    });
    const exited: Promise<SandboxExit> = closed.then(async () => {
      touch(workspaceId);
      // Gone only once its processes are: the next call must not meet them half-killed.
      if (killing) return killing.then(() => ({ exitCode: undefined, killed: true }));
      const { exitCode } = await waitForExec(execId).catch(() => ({ exitCode: undefined }));
      return { exitCode, killed: false };
    });
    const stopProcess = async () => {
      socket.destroy();
      const { running } = await waitForExec(execId).catch(() => ({ running: true }));
      if (running) await kill(workspaceId);
    };
    return {
      stdin: stdin ? stdinOf(socket) : null,
      stdout,
      stderr,
      kill() {
        killing ??= (
          options.kills === 'container' ? kill(workspaceId).finally(() => socket.destroy()) : stopProcess()
        ).catch(() => undefined);
      },
      exited,
    };
  };

  const fileHelper = async (workspaceId: string): Promise<StartHelper> => {
    const source = (await fileHelperSource()).toString('utf8');
    return (helperArguments, { stdin }) =>
      launch(workspaceId, ['python3', '-I', '-S', '-c', source, ...helperArguments], { stdin, kills: 'process' });
  };

  return {
    kind: 'docker',

    async probe() {
      await api.call({ method: 'GET', path: '/_ping' });
      if (!adopted) {
        adopted = true;
        adoptRunning().catch(() => {
          adopted = false;
        });
      }
      try {
        await api.call({ method: 'GET', path: `/images/${encodeURIComponent(image)}/json` });
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
        throw new Error(
          `The sandbox image ${image} is not on the Docker host; build it (sandbox-image/ or scripts/build-sandbox-image.sh).`,
        );
      }
    },

    async ensureWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      if (!ready.has(workspaceId)) {
        await api.call({
          method: 'POST',
          path: '/volumes/create',
          body: { Name: volumeName(workspaceId), Labels: { [WORKSPACE_LABEL]: workspaceId } },
        });
        await ensureRunning(workspaceId);
      }
      touch(workspaceId);
      return { placement: `docker ${host}` };
    },

    async removeWorkspace(workspaceId) {
      requireWorkspaceId(workspaceId);
      ready.delete(workspaceId);
      clearTimeout(idleTimers.get(workspaceId));
      idleTimers.delete(workspaceId);
      await removeContainer(workspaceId);
      await api.call({ method: 'DELETE', path: `/volumes/${volumeName(workspaceId)}`, accept: [404] });
    },

    async exec(workspaceId, execOptions) {
      requireWorkspaceId(workspaceId);
      checkExecOptions(execOptions);
      return runCommand(
        () => launch(workspaceId, ['/bin/sh', '-c', execOptions.command], { kills: 'container' }),
        execOptions,
      );
    },

    ...workspaceFileOperations(fileHelper),
  };
}
