import { useEffect, useId, useRef, useState } from 'react';
import { useAction } from '../action.js';
import { segment } from '../api.js';
import { PagedTable } from '../components/paged-table.js';
import { DateTime, ErrorAlert, RefreshButton, Section, StatusText, Term } from '../components/ui.js';
import { formatBytes, formatCount } from '../format.js';
import { useApiList } from '../lists.js';
import { useApi } from '../session.js';
import type { AgentWorkspace, EraseKind, ErasureCounts, ErasureReport } from '../types.js';

const KINDS: { value: EraseKind; label: string }[] = [
  { value: 'uploads', label: 'Uploads' },
  { value: 'artifacts', label: 'Artifacts' },
  { value: 'chats', label: 'Chats' },
];

export function WorkspacesSection({ agentId }: { agentId: string }) {
  const path = `/v1/admin/agents/${segment(agentId)}/workspaces`;
  const workspaces = useApiList<AgentWorkspace>(path);
  const [erasing, setErasing] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [last, setLast] = useState<{ userId: string; report: ErasureReport; include: EraseKind[] } | null>(null);
  const open = workspaces.items.find((workspace) => workspace.id === erasing);

  return (
    <Section
      title="Workspaces"
      description="Sandbox workspaces of this agent's users."
      actions={<RefreshButton loading={workspaces.loading} onRefresh={workspaces.reload} />}
    >
      <StatusText message={status} />
      {last === null ? null : <ErasureResult userId={last.userId} report={last.report} include={last.include} />}
      <PagedTable
        list={workspaces}
        label="Workspaces table"
        empty="No workspaces yet."
        head={
          <>
            <th scope="col">Owner (user id)</th>
            <th scope="col">Backend</th>
            <th scope="col">Size (last measured)</th>
            <th scope="col">Last used</th>
            <th scope="col">Deleted after</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </>
        }
        row={(workspace) => (
          <WorkspaceRow
            key={workspace.id}
            workspace={workspace}
            open={erasing === workspace.id}
            onOpen={() => {
              setStatus('');
              setErasing(erasing === workspace.id ? null : workspace.id);
            }}
          />
        )}
        below={
          // Below the table, not inside its scroll region: the panel is always shown whole.
          open === undefined ? null : (
            <ErasePanel
              key={open.id}
              agentId={agentId}
              userId={open.userId}
              onCancel={() => setErasing(null)}
              onErased={(report, include) => {
                setLast({ userId: open.userId, report, include });
                setStatus(`Erase ${report.status} for ${open.userId}.`);
                setErasing(null);
                workspaces.reload();
              }}
            />
          )
        }
      />
    </Section>
  );
}

function WorkspaceRow({ workspace, open, onOpen }: { workspace: AgentWorkspace; open: boolean; onOpen: () => void }) {
  return (
    <tr>
      <td>
        <code className="mono">{workspace.userId}</code>
      </td>
      <td>{workspace.backend}</td>
      {/* As last measured by a tool call; a listing counts no files (that would walk every workspace). */}
      <td>{formatBytes(workspace.bytesUsed)}</td>
      <td>
        <DateTime iso={workspace.lastUsedAt} />
      </td>
      <td>
        {workspace.deleteAfter === null ? (
          <span className="muted">Retention off</span>
        ) : (
          <DateTime iso={workspace.deleteAfter} />
        )}
      </td>
      <td className="actions">
        <button type="button" className="button button-small" aria-expanded={open} onClick={onOpen}>
          Erase…
        </button>
      </td>
    </tr>
  );
}

/**
 * The workspace, its egress records and the included kinds: the only ones an erasure counts (the
 * rest are kept).
 */
function Counts({ counts, caption, include }: { counts: ErasureCounts; caption: string; include: EraseKind[] }) {
  return (
    <div>
      <p className="counts-caption">{caption}</p>
      <dl className="stats stats-small">
        <Term term="Workspaces">{formatCount(counts.workspaces)}</Term>
        <Term term="Egress records">{formatCount(counts.egressDecisions)}</Term>
        {KINDS.filter((kind) => include.includes(kind.value)).map((kind) => (
          <Term key={kind.value} term={kind.label}>
            {formatCount(counts[kind.value])}
          </Term>
        ))}
      </dl>
    </div>
  );
}

/** Dry run first (re-run whenever the included kinds change), then "Erase now". */
function ErasePanel({
  agentId,
  userId,
  onErased,
  onCancel,
}: {
  agentId: string;
  userId: string;
  onErased: (report: ErasureReport, include: EraseKind[]) => void;
  onCancel: () => void;
}) {
  const api = useApi();
  const path = `/v1/admin/agents/${segment(agentId)}/users/${segment(userId)}/erase`;
  const [include, setInclude] = useState<EraseKind[]>([]);
  const [preview, setPreview] = useState<ErasureReport | null>(null);
  const { busy, error, run } = useAction();
  const started = useRef(false);

  function dryRun(kinds: EraseKind[]) {
    return run(async () => {
      setPreview(await api.post<ErasureReport>(path, { dryRun: true, include: kinds }));
    });
  }

  // The first dry run, once, when the panel opens.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs once on mount.
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void dryRun([]);
  }, []);

  function toggle(kind: EraseKind, on: boolean) {
    const next = KINDS.map((each) => each.value).filter((value) => (value === kind ? on : include.includes(value)));
    setInclude(next);
    void dryRun(next);
  }

  function erase() {
    void run(async () => {
      onErased(await api.post<ErasureReport>(path, { dryRun: false, include }), include);
    });
  }

  // User ids are the integrator's (spaces included): element ids come from React instead.
  const headingId = useId();
  return (
    <div className="erase-panel">
      <h3 id={headingId}>Erase the data of {userId}</h3>
      <p className="muted">
        The workspace and its egress records are always erased. Choose what else to erase for this user.
      </p>
      <fieldset className="checkbox-group">
        <legend>Also erase</legend>
        {KINDS.map((kind) => (
          <div className="checkbox" key={kind.value}>
            <input
              type="checkbox"
              id={`${headingId}-${kind.value}`}
              checked={include.includes(kind.value)}
              disabled={busy}
              onChange={(event) => toggle(kind.value, event.target.checked)}
            />
            <label htmlFor={`${headingId}-${kind.value}`}>{kind.label}</label>
          </div>
        ))}
      </fieldset>
      <StatusText message={busy ? 'Counting…' : ''} />
      {preview === null ? null : <Counts counts={preview.counts} caption="A real run would erase:" include={include} />}
      <ErrorAlert error={error} />
      <div className="button-row">
        <button type="button" className="button button-danger" onClick={erase} disabled={busy || preview === null}>
          Erase now
        </button>
        <button type="button" className="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </div>
  );
}

function ErasureResult({ userId, report, include }: { userId: string; report: ErasureReport; include: EraseKind[] }) {
  return (
    <div className={report.status === 'complete' ? 'callout callout-success' : 'callout callout-warning'}>
      <p>
        <strong>
          Erase {report.status} for <code className="mono">{userId}</code>.
        </strong>{' '}
        {report.status === 'partial'
          ? 'Some data could not be erased yet; erase again to finish.'
          : 'Nothing of the included kinds remains.'}
      </p>
      <Counts counts={report.counts} caption="Erased:" include={include} />
      <Counts counts={report.remaining} caption="Remaining:" include={include} />
    </div>
  );
}
