import type { Kysely } from 'kysely';
import type { UserHash } from '../auth/user-hash.js';
import type { AnswerRuns } from '../chat/answer-runs.js';
import { agentSpace } from '../chat/database-answer-store.js';
import type { DatabaseSchema } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { SandboxBackend } from '../sandbox/backend.js';
import type { FileStorage } from '../storage/file-storage.js';
import { deleteStoredFileRecord, type FileOwner } from '../uploads/file-registry.js';
import { countUsageRows, pseudonymiseUsage } from '../usage/usage-erasure.js';

type Db = Kysely<DatabaseSchema>;

/** What an erasure may take besides the workspace, which it always takes. */
export const ERASABLE_KINDS = ['uploads', 'artifacts', 'chats'] as const;
export type ErasableKind = (typeof ERASABLE_KINDS)[number];

/** How many of each kind of a user's data: erased, found, or still there. */
export interface ErasureCounts {
  workspaces: number;
  /** Decisions of the sandbox egress proxy about the user's workspace (erased with it, always). */
  egressDecisions: number;
  uploads: number;
  artifacts: number;
  chats: number;
}

/** The outcome of `eraseUserData`. */
export interface ErasureReport {
  dryRun: boolean;
  /** What this run erased, or for a dry run what a real run would erase. */
  counts: ErasureCounts;
  /** What is still there afterwards, of the workspace and the included kinds. */
  remaining: ErasureCounts;
  /** `complete` when nothing remains; `partial` when a step failed (or, dry run, when there is data). */
  status: 'complete' | 'partial';
  /**
   * Usage rows that named the user (or, dry run, name them now): erasure keeps them, with the user
   * id replaced by its keyed hash (`erased:<hash>`), so the tenant's sums stay true.
   */
  usageRows: number;
}

export interface ErasureDependencies {
  db: Db;
  storage: FileStorage;
  /** The sandbox backend, when the operator enabled sandboxes; without it workspaces cannot be removed. */
  backend?: SandboxBackend | undefined;
  logger: Logger;
  /** The process's resumable answers: a user's running answers stop, and their logs go, first. */
  answers?: AnswerRuns | undefined;
  /** The keyed hash that replaces the user id in usage rows. */
  userHash: UserHash;
  /** This process's usage writes, finished before the rows are counted or replaced. */
  usage?: { flush(): Promise<void> } | undefined;
}

/**
 * The parts of the service's dependencies that erasure is drawn from: the app's `AppDependencies`
 * carries them all, and nothing else of it is read.
 */
export interface ErasureSources {
  database: { db: Db };
  storage: FileStorage;
  /** The managed-sandbox runtime, present when the operator enabled sandboxes. */
  sandbox?: { backend: SandboxBackend; meter?: { flush(): Promise<void> } | undefined } | undefined;
  logger: Logger;
  answers?: AnswerRuns | undefined;
  userHash: UserHash;
  usage?: { flush(): Promise<void> } | undefined;
}

/**
 * What erasure needs, taken from the service's dependencies: one place for the admin routes,
 * the console and the session sweeper.
 *
 * @example
 * const report = await eraseUserData(erasureDependencies(deps), owner, { dryRun: true, include: ['chats'] });
 */
export function erasureDependencies(deps: ErasureSources): ErasureDependencies {
  return {
    db: deps.database.db,
    storage: deps.storage,
    backend: deps.sandbox?.backend,
    logger: deps.logger,
    answers: deps.answers,
    userHash: deps.userHash,
    // Sandbox readings in flight become usage writes: both are finished before rows are replaced.
    usage: {
      flush: async () => {
        await deps.sandbox?.meter?.flush();
        await deps.usage?.flush();
      },
    },
  };
}

export interface ErasureOptions {
  /** Count only, change nothing. */
  dryRun: boolean;
  include: readonly ErasableKind[];
}

/** Stored objects are erased this many at a time, so a user with many files never loads them all. */
const BATCH = 100;

const STORED_KIND = { uploads: 'upload', artifacts: 'artifact' } as const;

/** The owner's rows of a table that carries all three owner columns, for counting. */
function ownedRows(db: Db, table: 'stored_files' | 'workspaces' | 'chats' | 'egress_log', owner: FileOwner) {
  // The three tables share the owner columns; typed as one of them, the query stays simple. The
  // `kind` column is only filtered on for `stored_files`.
  return db
    .selectFrom(table as 'stored_files')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId);
}

async function countRows(query: ReturnType<typeof ownedRows>): Promise<number> {
  const row = await query.select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * How much of the user's data there is: the workspace (0 or 1) and each included kind; kinds not
 * included count 0, since an erasure without them leaves them alone.
 */
export async function measureUserData(
  db: Db,
  owner: FileOwner,
  include: readonly ErasableKind[],
): Promise<ErasureCounts> {
  const stored = (kind: 'uploads' | 'artifacts') =>
    include.includes(kind)
      ? countRows(ownedRows(db, 'stored_files', owner).where('kind', '=', STORED_KIND[kind]))
      : Promise.resolve(0);
  const [workspaces, egressDecisions, uploads, artifacts, chats] = await Promise.all([
    countRows(ownedRows(db, 'workspaces', owner)),
    countRows(ownedRows(db, 'egress_log', owner)),
    stored('uploads'),
    stored('artifacts'),
    include.includes('chats') ? countRows(ownedRows(db, 'chats', owner)) : Promise.resolve(0),
  ]);
  return { workspaces, egressDecisions, uploads, artifacts, chats };
}

/**
 * Removes the user's workspace on its backend (the files, then the record). Without a backend
 * of the workspace's kind, or while a call holds it, its files may still exist or come back, so
 * the record stays for a later retry.
 */
async function eraseWorkspace(deps: ErasureDependencies, owner: FileOwner): Promise<number> {
  const workspace = await deps.db
    .selectFrom('workspaces')
    .select(['id', 'backend'])
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .executeTakeFirst();
  if (!workspace) return 0;
  if (deps.backend?.kind !== workspace.backend) {
    deps.logger.warn(
      { workspaceId: workspace.id, backend: workspace.backend },
      'workspace kept: its sandbox backend is not running on this service',
    );
    return 0;
  }
  const lease = await deps.db
    .selectFrom('workspace_leases')
    .select('id')
    .where('workspace_id', '=', workspace.id)
    .where('expires_at', '>', Date.now())
    .executeTakeFirst();
  if (lease) {
    // A tool call is running in it: removing the files under it could leave them recreated and
    // unrecorded. The erasure is partial; a retry after the call removes the workspace.
    deps.logger.warn({ workspaceId: workspace.id }, 'workspace kept: a tool call is using it');
    return 0;
  }
  try {
    await deps.backend.removeWorkspace(workspace.id);
  } catch (error) {
    deps.logger.error({ workspaceId: workspace.id, err: error }, 'workspace removal failed');
    return 0;
  }
  return deps.db.transaction().execute(async (transaction) => {
    await transaction.deleteFrom('workspace_leases').where('workspace_id', '=', workspace.id).execute();
    await transaction.deleteFrom('egress_usage').where('workspace_id', '=', workspace.id).execute();
    const result = await transaction.deleteFrom('workspaces').where('id', '=', workspace.id).executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}

/**
 * Deletes the user's stored objects of one kind: each object's bytes first, then its row (and an
 * artifact's download records). An object storage refuses keeps its row, so a retry finds it.
 */
async function eraseStoredFiles(
  deps: ErasureDependencies,
  owner: FileOwner,
  kind: 'uploads' | 'artifacts',
): Promise<number> {
  let erased = 0;
  let after = '';
  for (;;) {
    const batch = await deps.db
      .selectFrom('stored_files')
      .select('storage_path')
      .where('tenant_id', '=', owner.tenantId)
      .where('agent_id', '=', owner.agentId)
      .where('user_id', '=', owner.userId)
      .where('kind', '=', STORED_KIND[kind])
      .where('storage_path', '>', after)
      .orderBy('storage_path')
      .limit(BATCH)
      .execute();
    for (const { storage_path: storagePath } of batch) {
      try {
        await deps.storage.delete(storagePath);
      } catch (error) {
        deps.logger.error({ storagePath, err: error }, 'storage delete failed; the record is kept');
        continue;
      }
      await deps.db.transaction().execute(async (transaction) => {
        if (kind === 'artifacts') {
          await transaction
            .deleteFrom('artifact_downloads')
            .where('storage_path', '=', storagePath)
            .where('tenant_id', '=', owner.tenantId)
            .where('agent_id', '=', owner.agentId)
            .where('user_id', '=', owner.userId)
            .execute();
        }
        await deleteStoredFileRecord(transaction, owner, storagePath);
      });
      erased += 1;
    }
    const last = batch.at(-1);
    if (!last || batch.length < BATCH) return erased;
    after = last.storage_path;
  }
}

/**
 * Download records of the user's artifacts that were deleted before (records outlive their file
 * until retention): nothing of an erased user's artifacts stays behind. Records of an artifact
 * whose bytes could not be deleted stay with it.
 */
async function eraseOrphanedDownloads(db: Db, owner: FileOwner): Promise<void> {
  await db
    .deleteFrom('artifact_downloads')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('stored_files')
            .select('storage_path')
            .whereRef('stored_files.storage_path', '=', 'artifact_downloads.storage_path'),
        ),
      ),
    )
    .execute();
}

/** The decisions the egress proxy recorded about the user's workspace: who it reached, and when. */
async function eraseEgressDecisions(db: Db, owner: FileOwner): Promise<number> {
  const result = await db
    .deleteFrom('egress_log')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

async function eraseChats(db: Db, owner: FileOwner): Promise<number> {
  const result = await db
    .deleteFrom('chats')
    .where('tenant_id', '=', owner.tenantId)
    .where('agent_id', '=', owner.agentId)
    .where('user_id', '=', owner.userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Erases one user's data within an agent: always the workspace (on its backend, then the
 * record), and the included kinds — uploads, published artifacts (with their download records)
 * and chats. Every step runs even when an earlier one failed; a failed object keeps its row and
 * shows up in `remaining`, so repeating the erasure finishes the job. A repeat with nothing left
 * erases nothing and is complete. A dry run only counts.
 *
 * @example
 * const report = await eraseUserData(deps, { tenantId, agentId, userId: 'alice' }, { dryRun: false, include: ['chats'] });
 * if (report.status === 'partial') console.log('retry later; still there:', report.remaining);
 */
export async function eraseUserData(
  deps: ErasureDependencies,
  owner: FileOwner,
  options: ErasureOptions,
): Promise<ErasureReport> {
  const include = options.include;
  await deps.usage?.flush();
  if (options.dryRun) {
    const found = await measureUserData(deps.db, owner, include);
    const usageRows = await countUsageRows(deps.db, owner);
    return {
      dryRun: true,
      counts: found,
      remaining: found,
      status: isEmpty(found) ? 'complete' : 'partial',
      usageRows,
    };
  }
  // Nothing of the user's keeps running into what is being erased; their answer logs go with it.
  const answers = { space: agentSpace(owner), userId: owner.userId };
  await deps.answers?.stop(answers, { wait: true });
  await deps.answers?.store.forget(answers);
  const counts: ErasureCounts = {
    workspaces: await eraseWorkspace(deps, owner),
    egressDecisions: await eraseEgressDecisions(deps.db, owner),
    uploads: include.includes('uploads') ? await eraseStoredFiles(deps, owner, 'uploads') : 0,
    artifacts: include.includes('artifacts') ? await eraseStoredFiles(deps, owner, 'artifacts') : 0,
    chats: include.includes('chats') ? await eraseChats(deps.db, owner) : 0,
  };
  if (include.includes('artifacts')) await eraseOrphanedDownloads(deps.db, owner);
  // The workspace's last sandbox reading, billed as it was removed, is among the rows replaced.
  await deps.usage?.flush();
  const usageRows = await pseudonymiseUsage(deps.db, owner, deps.userHash(owner.userId));
  const remaining = await measureUserData(deps.db, owner, include);
  return { dryRun: false, counts, remaining, status: isEmpty(remaining) ? 'complete' : 'partial', usageRows };
}

/** Whether nothing is counted. */
export function isEmpty(counts: ErasureCounts): boolean {
  return counts.workspaces + counts.egressDecisions + counts.uploads + counts.artifacts + counts.chats === 0;
}
