import { type FormEvent, useId, useState } from 'react';
import { segment } from '../api.js';
import { DeleteControl, RenameForm } from '../components/manage.js';
import {
  DateTime,
  ErrorAlert,
  ListState,
  LoadMore,
  PageHeading,
  Section,
  StatusText,
  TableScroll,
} from '../components/ui.js';
import { useNavigateWithMessage } from '../flash.js';
import { formatBytes, formatCount, formatDate, formatSeconds } from '../format.js';
import { useDocumentTitle, usePaged, useResource } from '../hooks.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { AgentRecord, Page, TenantRecord, TenantUsage } from '../types.js';

const DAY = 86_400_000;

export function TenantPage({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const base = `/v1/admin/tenants/${segment(tenantId)}`;
  const tenant = useResource<TenantRecord>(base, () => api.get<TenantRecord>(base));
  const name = tenant.data?.name ?? '';
  useDocumentTitle(name === '' ? 'Tenant' : name);
  const go = useNavigateWithMessage();

  async function rename(next: string) {
    tenant.set(await api.patch<TenantRecord>(base, { name: next }));
  }

  async function remove(force: boolean) {
    await api.delete(base, force ? { force: true } : undefined);
    go('#/tenants', `Tenant ${name} deleted.`);
  }

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <ol>
          <li>
            <a href="#/tenants">Tenants</a>
          </li>
          <li aria-current="page">{name === '' ? tenantId : name}</li>
        </ol>
      </nav>
      <PageHeading>{name === '' ? 'Tenant' : name}</PageHeading>
      <ErrorAlert error={tenant.error} />
      {tenant.data === undefined ? (
        tenant.loading ? (
          <p className="muted">Loading…</p>
        ) : null
      ) : (
        <>
          <dl className="meta">
            <div>
              <dt>ID</dt>
              <dd>
                <code className="mono">{tenant.data.id}</code>
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>
                <DateTime iso={tenant.data.createdAt} />
              </dd>
            </div>
          </dl>
          <UsageSection tenantId={tenantId} />
          <AgentsSection tenantId={tenantId} />
          <Section title="Settings">
            <RenameForm label="Tenant name" button="Rename tenant" current={tenant.data.name} onRename={rename} />
            <h3>Delete</h3>
            <DeleteControl
              noun="tenant"
              explanation="Deleting the tenant removes it with its agents and their data. This cannot be undone."
              onDelete={remove}
            />
          </Section>
        </>
      )}
    </>
  );
}

function UsageSection({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const [range] = useState(() => {
    const to = new Date();
    return { from: new Date(to.getTime() - 30 * DAY).toISOString(), to: to.toISOString() };
  });
  const usage = useResource<TenantUsage>(`usage:${tenantId}`, () =>
    api.get<TenantUsage>(`/v1/admin/tenants/${segment(tenantId)}/usage`, range),
  );
  const data = usage.data;
  return (
    <Section
      title="Usage"
      description={
        data === undefined
          ? 'The last 30 days.'
          : `The last 30 days: ${formatDate(data.from)} to ${formatDate(data.to)}.`
      }
    >
      <ErrorAlert error={usage.error} />
      {data === undefined ? (
        usage.loading ? (
          <p className="muted">Loading…</p>
        ) : null
      ) : (
        <dl className="stats">
          <div>
            <dt>Sandbox tool calls</dt>
            <dd>{formatCount(data.toolCalls)}</dd>
          </div>
          <div>
            <dt>Exec time</dt>
            <dd>{formatSeconds(data.execSeconds)}</dd>
          </div>
          <div>
            <dt>Bytes stored</dt>
            <dd>{formatBytes(data.bytesStored)}</dd>
          </div>
          <div>
            <dt>Chats</dt>
            <dd>{formatCount(data.chats)}</dd>
          </div>
          <div>
            <dt>Downloads</dt>
            <dd>{formatCount(data.downloads)}</dd>
          </div>
        </dl>
      )}
    </Section>
  );
}

function AgentsSection({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const id = useId();
  const path = `/v1/admin/tenants/${segment(tenantId)}/agents`;
  const agents = usePaged<AgentRecord>(path, (cursor) => api.get<Page<AgentRecord>>(path, { limit: 50, cursor }));
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);

  async function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed === '') return;
    setBusy(true);
    setError(null);
    setStatus('');
    try {
      const created = await api.post<AgentRecord>(path, { name: trimmed });
      setName('');
      setStatus(`Agent ${created.name} created.`);
      agents.reload();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Section title="Agents">
      <form className="inline-form" onSubmit={create}>
        <div className="field">
          <label htmlFor={`${id}-name`}>Agent name</label>
          <input
            id={`${id}-name`}
            value={name}
            required
            maxLength={200}
            onChange={(event) => setName(event.target.value)}
          />
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          Create agent
        </button>
      </form>
      <StatusText message={status} />
      <ErrorAlert error={error} />
      <ErrorAlert error={agents.error} />
      <ListState loaded={agents.loaded} count={agents.items.length} empty="No agents yet." />
      {agents.items.length > 0 ? (
        <TableScroll label="Agents table">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">ID</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {agents.items.map((agent) => (
                <tr key={agent.id}>
                  <td>
                    <a href={href({ page: 'agent', agentId: agent.id })}>{agent.name}</a>
                  </td>
                  <td>
                    <code className="mono">{agent.id}</code>
                  </td>
                  <td>
                    <DateTime iso={agent.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      <LoadMore nextCursor={agents.nextCursor} loading={agents.loading} onLoadMore={agents.loadMore} />
    </Section>
  );
}
