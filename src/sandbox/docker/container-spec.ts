import { createHash } from 'node:crypto';
import { HELPER_OPEN_FILES, type ProcessLimits } from '../runtime/limits.js';

/** Where the workspace volume is mounted, and the working directory of every process. */
export const WORKSPACE_MOUNT = '/workspace';
/** The unprivileged user every process runs as (the sandbox image's `sandbox` user). */
export const SANDBOX_UID = 1000;
export const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_UID}`;
/**
 * The image label saying which version of the image contract (what the service relies on inside
 * it) an image was built for; an image without it, or of an older one, is refused by the probe.
 * 2: python3-seccomp, with which the supervisor loads the workspace's seccomp filter.
 */
export const SANDBOX_IMAGE_CONTRACT_LABEL = 'org.mordn.sandbox-image.contract';
export const SANDBOX_IMAGE_CONTRACT = 2;
/** Label naming the workspace a container or volume belongs to. */
export const WORKSPACE_LABEL = 'org.mordn.workspace';

/**
 * The whole environment of a sandboxed process (plus what the image defines): nothing of the
 * service's own environment ever reaches a container.
 */
export const SANDBOX_ENVIRONMENT = [
  'PATH=/usr/local/bin:/usr/bin:/bin',
  `HOME=${WORKSPACE_MOUNT}`,
  'LANG=C.UTF-8',
  // One BLAS thread per process (see the bwrap sandbox's environment).
  'OPENBLAS_NUM_THREADS=1',
  'TMPDIR=/tmp',
  'PYTHONDONTWRITEBYTECODE=1',
];

/** The process limits, held by container settings and `limitedCommand`, plus the container's CPUs. */
export interface ContainerLimits extends ProcessLimits {
  cpus: number;
}

/** Names derived from the service-assigned workspace id (never from user input). */
export function containerName(workspaceId: string): string {
  return `mordn-${workspaceId}`;
}

/**
 * The volume of a workspace that has no filesystem of its own (weak limits): opaque, because a
 * volume's name shows in the container's /proc/self/mountinfo.
 */
export function volumeName(workspaceId: string): string {
  return `mordn-${createHash('sha256').update(workspaceId).digest('hex').slice(0, 32)}`;
}

/**
 * Host tasks of gVisor itself (the Sentry's threads, the gofer), which share a runsc container's
 * pids limit with the sandboxed processes: without room for them the Sentry fails to start
 * threads and the whole container dies.
 */
export const GVISOR_TASKS = 512;

/** The volume of a workspace made before workspaces had filesystems of their own. */
export function legacyVolumeName(workspaceId: string): string {
  return `mordn-${workspaceId}`;
}

/** Where the workspace's files come from: its own mounted filesystem, or a named volume. */
export type WorkspaceMount = { type: 'bind'; source: string } | { type: 'volume' };

/**
 * The `POST /containers/create` body of a workspace container: no network, no capabilities,
 * no privilege gain, a read-only root with a size-capped tmpfs /tmp, pids/memory/CPU limits of
 * the container as a whole (the tmpfs is charged to its memory), per-process rlimits, the
 * unprivileged user, and the workspace as the only mount. Its main process only keeps the
 * container alive (`docker-init` reaps orphans); the supervisor and all work arrive as execs.
 */
export function workspaceContainer(
  workspaceId: string,
  image: string,
  limits: ContainerLimits,
  options: { mount: WorkspaceMount; runtime?: 'runc' | 'runsc' },
) {
  const memory = limits.memoryBytes;
  const mount =
    options.mount.type === 'bind'
      ? {
          Type: 'bind',
          Source: options.mount.source,
          Target: WORKSPACE_MOUNT,
          BindOptions: { Propagation: 'rprivate' },
        }
      : { Type: 'volume', Source: volumeName(workspaceId), Target: WORKSPACE_MOUNT };
  return {
    Image: image,
    Entrypoint: ['sleep'],
    Cmd: ['infinity'],
    User: SANDBOX_USER,
    WorkingDir: WORKSPACE_MOUNT,
    Env: SANDBOX_ENVIRONMENT,
    Hostname: 'sandbox',
    NetworkDisabled: true,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    Labels: { [WORKSPACE_LABEL]: workspaceId },
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${limits.tmpBytes},mode=1777` },
      PidsLimit: limits.processes + (options.runtime === 'runsc' ? GVISOR_TASKS : 0),
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: Math.round(limits.cpus * 1e9),
      Ulimits: [
        { Name: 'nofile', Soft: limits.openFiles, Hard: Math.max(limits.openFiles, HELPER_OPEN_FILES) },
        { Name: 'fsize', Soft: limits.fileSizeBytes, Hard: limits.fileSizeBytes },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      Mounts: [mount],
      ...(options.runtime === 'runsc' ? { Runtime: 'runsc' } : {}),
      Init: true,
      IpcMode: 'private',
      RestartPolicy: { Name: 'no' },
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}
