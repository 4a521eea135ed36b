import { HELPER_OPEN_FILES, type ProcessLimits } from '../runtime/limits.js';

/** Where the workspace volume is mounted, and the working directory of every process. */
export const WORKSPACE_MOUNT = '/workspace';
/** The unprivileged user every process runs as (the sandbox image's `sandbox` user). */
export const SANDBOX_USER = '1000:1000';
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
  'TMPDIR=/tmp',
  'PYTHONDONTWRITEBYTECODE=1',
];

/** The process limits, held by container settings and `limitedCommand`, plus the container's CPUs. */
export interface ContainerLimits extends ProcessLimits {
  cpus: number;
}

/**
 * Wraps a command in its address-space limit. RLIMIT_AS cannot be a container ulimit: runc's
 * own start-up runs under the container's rlimits and fails below a few GiB of address space.
 */
export function limitedCommand(limits: Pick<ContainerLimits, 'memoryBytes'>, command: readonly string[]): string[] {
  const kibibytes = Math.floor(limits.memoryBytes / 1024);
  return ['/bin/sh', '-c', `ulimit -v ${kibibytes} && exec "$@"`, 'sh', ...command];
}

/** Names derived from the service-assigned workspace id (never from user input). */
export function containerName(workspaceId: string): string {
  return `mordn-${workspaceId}`;
}

export function volumeName(workspaceId: string): string {
  return `mordn-${workspaceId}`;
}

/**
 * The `POST /containers/create` body of a workspace container: no network, no capabilities,
 * no privilege gain, a read-only root with a size-capped tmpfs /tmp, pids/memory/CPU limits,
 * per-process rlimits, the unprivileged user, and the workspace volume as the only mount.
 * Its main process only keeps the container alive (`docker-init` reaps orphans); all work
 * arrives as execs.
 */
export function workspaceContainer(workspaceId: string, image: string, limits: ContainerLimits) {
  const memory = limits.memoryBytes + limits.tmpBytes;
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
      PidsLimit: limits.processes,
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: Math.round(limits.cpus * 1e9),
      Ulimits: [
        { Name: 'nofile', Soft: limits.openFiles, Hard: Math.max(limits.openFiles, HELPER_OPEN_FILES) },
        { Name: 'fsize', Soft: limits.fileSizeBytes, Hard: limits.fileSizeBytes },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      Mounts: [{ Type: 'volume', Source: volumeName(workspaceId), Target: WORKSPACE_MOUNT }],
      Init: true,
      IpcMode: 'private',
      RestartPolicy: { Name: 'no' },
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}
