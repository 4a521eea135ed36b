import { useState } from 'react';
import { segment } from '../api.js';
import { DetailPage } from '../components/detail-page.js';
import { LimitsEditor } from '../components/limits-editor.js';
import { SettingsSection } from '../components/manage.js';
import { DateTime, Section, Term } from '../components/ui.js';
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
  // Each publish may change what the preview's chat offers (the picker follows the published config).
  const [publishes, setPublishes] = useState(0);

  async function rename(next: string) {
    agent.set(await api.patch<AgentRecord>(base, { name: next }));
  }

  async function remove(force: boolean) {
    await api.delete(base, force ? { force: true } : undefined);
    go(tenantId === undefined ? '#/tenants' : href({ page: 'tenant', tenantId }), `Agent ${name} deleted.`);
  }

  return (
    <DetailPage
      crumbs={
        tenantId === undefined
          ? []
          : [{ href: href({ page: 'tenant', tenantId }), label: tenant.data?.name ?? tenantId }]
      }
      current={name === '' ? agentId : name}
      title={name === '' ? 'Agent' : name}
      record={agent}
    >
      {(data) => (
        <>
          <dl className="meta">
            <Term term="ID">
              <code className="mono">{data.id}</code>
            </Term>
            <Term term="Tenant">
              <a href={href({ page: 'tenant', tenantId: data.tenantId })}>{tenant.data?.name ?? data.tenantId}</a>
            </Term>
            <Term term="Created">
              <DateTime iso={data.createdAt} />
            </Term>
          </dl>
          <KeysSection agentId={agentId} />
          <ConfigSection
            agentId={agentId}
            tenantId={data.tenantId}
            onPublished={() => setPublishes((count) => count + 1)}
          />
          <WorkspacesSection agentId={agentId} />
          <PreviewSection agentId={agentId} publishes={publishes} />
          <Section
            title="Limits"
            description={
              <>
                Empty is unlimited; 0 refuses everything. These can only narrow the{' '}
                <a href={href({ page: 'tenant-usage', tenantId: data.tenantId })}>tenant's limits</a>: the lower of the
                two applies.
              </>
            }
          >
            <LimitsEditor
              path={`${base}/limits`}
              label="Agent limits"
              outerPath={`/v1/admin/tenants/${segment(data.tenantId)}/limits`}
            />
          </Section>
          <SettingsSection
            noun="agent"
            current={data.name}
            explanation="Deleting the agent removes it with its configuration and data. This cannot be undone."
            onRename={rename}
            onDelete={remove}
          />
        </>
      )}
    </DetailPage>
  );
}
