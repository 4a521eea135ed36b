import { segment } from '../api.js';
import { DeleteControl, RenameForm } from '../components/manage.js';
import { DateTime, ErrorAlert, PageHeading, Section } from '../components/ui.js';
import { useNavigateWithMessage } from '../flash.js';
import { useDocumentTitle, useResource } from '../hooks.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { AgentRecord, TenantRecord } from '../types.js';
import { ConfigSection } from './agent-config.js';
import { KeysSection } from './agent-keys.js';
import { PreviewSection } from './agent-preview.js';
import { WorkspacesSection } from './agent-workspaces.js';

export function AgentPage({ agentId }: { agentId: string }) {
  const api = useApi();
  const base = `/v1/admin/agents/${segment(agentId)}`;
  const agent = useResource<AgentRecord>(base, () => api.get<AgentRecord>(base));
  const tenantId = agent.data?.tenantId;
  const tenant = useResource<TenantRecord | null>(`tenant:${tenantId ?? ''}`, () =>
    tenantId === undefined
      ? Promise.resolve(null)
      : api.get<TenantRecord>(`/v1/admin/tenants/${segment(tenantId)}`).catch(() => null),
  );
  const name = agent.data?.name ?? '';
  useDocumentTitle(name === '' ? 'Agent' : name);
  const go = useNavigateWithMessage();

  async function rename(next: string) {
    agent.set(await api.patch<AgentRecord>(base, { name: next }));
  }

  async function remove(force: boolean) {
    await api.delete(base, force ? { force: true } : undefined);
    go(tenantId === undefined ? '#/tenants' : href({ page: 'tenant', tenantId }), `Agent ${name} deleted.`);
  }

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <ol>
          <li>
            <a href="#/tenants">Tenants</a>
          </li>
          {tenantId === undefined ? null : (
            <li>
              <a href={href({ page: 'tenant', tenantId })}>{tenant.data?.name ?? tenantId}</a>
            </li>
          )}
          <li aria-current="page">{name === '' ? agentId : name}</li>
        </ol>
      </nav>
      <PageHeading>{name === '' ? 'Agent' : name}</PageHeading>
      <ErrorAlert error={agent.error} />
      {agent.data === undefined ? (
        agent.loading ? (
          <p className="muted">Loading…</p>
        ) : null
      ) : (
        <>
          <dl className="meta">
            <div>
              <dt>ID</dt>
              <dd>
                <code className="mono">{agent.data.id}</code>
              </dd>
            </div>
            <div>
              <dt>Tenant</dt>
              <dd>
                <a href={href({ page: 'tenant', tenantId: agent.data.tenantId })}>
                  {tenant.data?.name ?? agent.data.tenantId}
                </a>
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>
                <DateTime iso={agent.data.createdAt} />
              </dd>
            </div>
          </dl>
          <KeysSection agentId={agentId} />
          <ConfigSection agentId={agentId} />
          <WorkspacesSection agentId={agentId} />
          <PreviewSection agentId={agentId} />
          <Section title="Settings">
            <RenameForm label="Agent name" button="Rename agent" current={agent.data.name} onRename={rename} />
            <h3>Delete</h3>
            <DeleteControl
              noun="agent"
              explanation="Deleting the agent removes it with its configuration and data. This cannot be undone."
              onDelete={remove}
            />
          </Section>
        </>
      )}
    </>
  );
}
