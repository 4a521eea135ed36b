import { PagedTable } from '../components/paged-table.js';
import { Badge, Chip, DateTime, PageHeading, RefreshButton, Section } from '../components/ui.js';
import { useDocumentTitle } from '../hooks.js';
import { useApiList } from '../lists.js';
import type { AdminAuditEntry } from '../types.js';

export function AuditPage() {
  useDocumentTitle('Audit log');
  const audit = useApiList<AdminAuditEntry>('/v1/admin/audit');
  return (
    <>
      <PageHeading subtitle="Every write to the admin API, newest first.">Audit log</PageHeading>
      <Section title="Entries" actions={<RefreshButton loading={audit.loading} onRefresh={audit.reload} />}>
        <PagedTable
          list={audit}
          label="Audit log table"
          empty="No admin writes recorded yet."
          dense
          head={
            <>
              <th scope="col">At</th>
              <th scope="col">Actor</th>
              <th scope="col">Method</th>
              <th scope="col">Route</th>
              <th scope="col">Target</th>
              <th scope="col">Status</th>
              <th scope="col">Outcome</th>
              <th scope="col">Request ID</th>
            </>
          }
          row={(entry) => (
            <tr key={entry.id}>
              <td className="nowrap">
                <DateTime iso={entry.at} seconds />
              </td>
              <td>
                <Chip text={entry.actor} />
              </td>
              <td>
                <span className="method">{entry.method}</span>
              </td>
              <td className="audit-route">
                <Chip text={entry.route} breakAfter="/" />
              </td>
              <td>
                {Object.keys(entry.target).length === 0 ? (
                  <span className="muted">—</span>
                ) : (
                  <ul className="plain-list">
                    {Object.entries(entry.target).map(([name, value]) => (
                      <li key={name}>
                        <Chip text={`${name}=${value}`} />
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>{entry.status}</td>
              <td>
                <Badge tone={entry.outcome === 'ok' ? 'ok' : 'bad'}>{entry.outcome}</Badge>
              </td>
              <td>
                <Chip text={entry.requestId} />
              </td>
            </tr>
          )}
        />
      </Section>
    </>
  );
}
