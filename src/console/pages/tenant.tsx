import { useState } from 'react';
import { segment } from '../api.js';
import { DetailPage } from '../components/detail-page.js';
import { DirectoryTable } from '../components/directory-table.js';
import { SettingsSection } from '../components/manage.js';
import { CreateByNameForm } from '../components/name-form.js';
import { ResourceView } from '../components/resource-view.js';
import { DateTime, Section, Term } from '../components/ui.js';
import { useNavigateWithMessage } from '../flash.js';
import { formatBytes, formatCount, formatDate, formatSeconds } from '../format.js';
import { useDocumentTitle, useResource } from '../hooks.js';
import { useApiList } from '../lists.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { AgentRecord, TenantRecord, TenantUsage } from '../types.js';
import { EgressSection } from './tenant-egress.js';

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
    <DetailPage
      crumbs={[]}
      current={name === '' ? tenantId : name}
      title={name === '' ? 'Tenant' : name}
      record={tenant}
    >
      {(data) => (
        <>
          <dl className="meta">
            <Term term="ID">
              <code className="mono">{data.id}</code>
            </Term>
            <Term term="Created">
              <DateTime iso={data.createdAt} />
            </Term>
          </dl>
          <UsageSection tenantId={tenantId} />
          <AgentsSection tenantId={tenantId} />
          <EgressSection tenantId={tenantId} />
          <SettingsSection
            noun="tenant"
            current={data.name}
            explanation="Deleting the tenant removes it with its agents and their data. This cannot be undone."
            onRename={rename}
            onDelete={remove}
          />
        </>
      )}
    </DetailPage>
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
      actions={
        <a className="button" href={href({ page: 'tenant-usage', tenantId })}>
          Usage and limits
        </a>
      }
      description={
        data === undefined
          ? 'The last 30 days.'
          : `The last 30 days: ${formatDate(data.from)} to ${formatDate(data.to)}.`
      }
    >
      <ResourceView resource={usage}>
        {(loaded) => (
          <dl className="stats">
            <Term term="Sandbox tool calls">{formatCount(loaded.toolCalls)}</Term>
            <Term term="Exec time">{formatSeconds(loaded.execSeconds)}</Term>
            <Term term="Bytes stored">{formatBytes(loaded.bytesStored)}</Term>
            <Term term="Chats">{formatCount(loaded.chats)}</Term>
            <Term term="Downloads">{formatCount(loaded.downloads)}</Term>
          </dl>
        )}
      </ResourceView>
    </Section>
  );
}

function AgentsSection({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const path = `/v1/admin/tenants/${segment(tenantId)}/agents`;
  const agents = useApiList<AgentRecord>(path);

  async function create(name: string): Promise<string> {
    const created = await api.post<AgentRecord>(path, { name });
    agents.reload();
    return `Agent ${created.name} created.`;
  }

  return (
    <Section title="Agents">
      <CreateByNameForm label="Agent name" button="Create agent" onCreate={create} />
      <DirectoryTable
        list={agents}
        label="Agents table"
        empty="No agents yet."
        hrefOf={(agent) => href({ page: 'agent', agentId: agent.id })}
      />
    </Section>
  );
}
