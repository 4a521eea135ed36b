import type { CgroupLimits } from './cgroup-limits.js';
import type { WorkspaceCgroup } from './workspace-cgroup.js';

/**
 * Where workspace cgroups are made: one cgroup per active workspace, below the service's own
 * cgroup. `openCgroupHierarchy` finds one; the v1 and v2 openers each build one.
 */
export interface CgroupHierarchy {
  readonly version: 1 | 2;
  /** The parent directories workspace cgroups are created in: one per controller on v1, one on v2. */
  readonly directories: readonly string[];
  /** The same directories as one string, for logs. */
  readonly location: string;
  /**
   * Creates the named cgroup with these limits, or adopts it (and applies the limits) when an
   * earlier run left it. `name` is a workspace id matching `^[A-Za-z0-9_-]{1,64}$`.
   */
  create(name: string, limits: CgroupLimits): Promise<WorkspaceCgroup>;
}
