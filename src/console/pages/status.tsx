import { ResourceView } from '../components/resource-view.js';
import { Badge, Code, PageHeading, RefreshButton, Section } from '../components/ui.js';
import { describePorts, describeTenants } from '../egress.js';
import { useDocumentTitle, useResource } from '../hooks.js';
import { useApi } from '../session.js';
import type { CheckResult, ConsoleStatus } from '../types.js';

const READINESS_TONE = { ready: 'ok', draining: 'warn', unavailable: 'bad' } as const;
const CHECK_TONE: Record<CheckResult, 'ok' | 'bad' | 'warn'> = { ok: 'ok', failed: 'bad', timeout: 'warn' };

function orNone(value: string | null): string {
  return value === null || value === '' ? 'None' : value;
}

export function StatusPage() {
  useDocumentTitle('Status');
  const api = useApi();
  const status = useResource<ConsoleStatus>('status', () => api.get<ConsoleStatus>('/console/api/status'));
  return (
    <>
      <PageHeading subtitle="How this Mordn server is set up and whether it is ready.">Status</PageHeading>
      <ResourceView resource={status}>
        {(data) => (
          <Section title="Server" actions={<RefreshButton loading={status.loading} onRefresh={status.reload} />}>
            <table className="table table-keyvalue">
              <tbody>
                <tr>
                  <th scope="row">Version</th>
                  <td>
                    <code className="mono">{data.version}</code>
                  </td>
                </tr>
                <tr>
                  <th scope="row">Sandboxes (operator switch)</th>
                  <td>
                    <Badge tone={data.sandbox.operatorEnabled ? 'ok' : 'neutral'}>
                      {data.sandbox.operatorEnabled ? 'On' : 'Off'}
                    </Badge>
                  </td>
                </tr>
                <tr>
                  <th scope="row">Sandbox backend</th>
                  <td>{orNone(data.sandbox.backend)}</td>
                </tr>
                <tr>
                  <th scope="row">Containment</th>
                  <td>{orNone(data.sandbox.containment)}</td>
                </tr>
                <tr>
                  <th scope="row">Sandbox egress</th>
                  <td>
                    <Badge tone={data.sandbox.egress.enabled ? 'ok' : 'neutral'}>
                      {data.sandbox.egress.enabled ? 'On' : 'Off'}
                    </Badge>
                    <span className="reason">
                      {describeTenants(data.sandbox.egress.tenants)} · index{' '}
                      <Code>{data.sandbox.egress.packageIndexUrl}</Code> · ports{' '}
                      {describePorts(data.sandbox.egress.ports)}
                    </span>
                  </td>
                </tr>
                <tr>
                  <th scope="row">Readiness</th>
                  <td>
                    <Badge tone={READINESS_TONE[data.readiness.status] ?? 'neutral'}>{data.readiness.status}</Badge>
                  </td>
                </tr>
                {Object.entries(data.readiness.checks).map(([name, result]) => (
                  <tr key={name}>
                    <th scope="row" className="nested">
                      Check: {name}
                    </th>
                    <td>
                      <Badge tone={CHECK_TONE[result] ?? 'neutral'}>{result}</Badge>
                      {data.readiness.reasons?.[name] ? (
                        <span className="reason">{data.readiness.reasons[name]}</span>
                      ) : null}
                    </td>
                  </tr>
                ))}
                <tr>
                  <th scope="row">Storage driver</th>
                  <td>{data.storage.driver}</td>
                </tr>
                <tr>
                  <th scope="row">Database</th>
                  <td>{data.database.dialect}</td>
                </tr>
                <tr>
                  <th scope="row">Model</th>
                  <td>
                    {data.model.configured ? (
                      <>
                        {orNone(data.model.provider)}
                        {data.model.modelId === null ? null : (
                          <>
                            {' · '}
                            <code className="mono">{data.model.modelId}</code>
                          </>
                        )}
                      </>
                    ) : (
                      <Badge tone="warn">Not configured</Badge>
                    )}
                  </td>
                </tr>
              </tbody>
            </table>
          </Section>
        )}
      </ResourceView>
    </>
  );
}
