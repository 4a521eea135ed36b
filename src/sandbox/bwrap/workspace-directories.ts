import { randomUUID } from 'node:crypto';
import { chown, lstat, mkdir, mkdtemp, rename } from 'node:fs/promises';
import path from 'node:path';
import type { HostUser } from './run-sandboxed.js';

/**
 * The host side of workspaces: one directory per id under a root, and nothing else. These are
 * the only host file operations the backend performs: it creates, renames and removes workspace
 * directories, and never opens anything inside one (sandboxed code controls what is in there).
 */
export interface WorkspaceDirectories {
  /** Creates the workspace's directory when missing (mode 0700, owned by the host user). */
  ensure(workspaceId: string): Promise<string>;
  /** The workspace's directory; throws when it does not exist. */
  existing(workspaceId: string): Promise<string>;
  /**
   * Moves the workspace aside under a name no workspace id can take (ids never contain a dot),
   * so no new sandbox can start in it. Undefined when there is no such workspace.
   */
  detach(workspaceId: string): Promise<string | undefined>;
  /** Undoes `detach` after a failed removal, so that removing can be retried. */
  reattach(detached: string, workspaceId: string): Promise<void>;
  /** A fresh empty directory beside the workspaces (for the probe), owned by the host user. */
  createScratch(): Promise<string>;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/**
 * Workspace directories under `root` (mode 0700). With a `hostUser` (the service runs as root and
 * sandboxes as that user), each workspace belongs to the host user; otherwise to the service's
 * own user.
 */
export function createWorkspaceDirectories(root: string, hostUser: HostUser | undefined): WorkspaceDirectories {
  let prepared: Promise<void> | undefined;
  const prepare = () => {
    prepared ??= mkdir(root, { recursive: true, mode: 0o700 }).then(
      () => undefined,
      (error: unknown) => {
        prepared = undefined;
        throw error;
      },
    );
    return prepared;
  };
  const own = async (directory: string) => {
    if (hostUser) await chown(directory, hostUser.uid, hostUser.gid);
  };

  return {
    async ensure(workspaceId) {
      await prepare();
      const directory = path.join(root, workspaceId);
      await mkdir(directory, { mode: 0o700 }).catch((error: unknown) => {
        if (errorCode(error) !== 'EEXIST') throw error;
      });
      const info = await lstat(directory);
      if (!info.isDirectory()) throw new Error(`Workspace ${workspaceId} is not a directory.`);
      // Also repairs a directory left unowned by a crash between mkdir and chown.
      if (hostUser && (info.uid !== hostUser.uid || info.gid !== hostUser.gid)) await own(directory);
      return directory;
    },

    async existing(workspaceId) {
      const directory = path.join(root, workspaceId);
      const info = await lstat(directory).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      });
      if (!info) throw new Error(`Workspace ${workspaceId} does not exist; ensureWorkspace creates it.`);
      if (!info.isDirectory()) throw new Error(`Workspace ${workspaceId} is not a directory.`);
      return directory;
    },

    async detach(workspaceId) {
      const detached = path.join(root, `.removing-${workspaceId}-${randomUUID()}`);
      try {
        await rename(path.join(root, workspaceId), detached);
        return detached;
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
    },

    async reattach(detached, workspaceId) {
      const original = path.join(root, workspaceId);
      // Only into a free name: a workspace created meanwhile must not be replaced.
      if (!(await lstat(original).catch(() => undefined))) await rename(detached, original);
    },

    async createScratch() {
      await prepare();
      const directory = await mkdtemp(path.join(root, '.probe-'));
      await own(directory);
      return directory;
    },
  };
}
