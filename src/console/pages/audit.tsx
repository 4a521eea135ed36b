import {
  Badge,
  DateTime,
  ErrorAlert,
  ListState,
  LoadMore,
  PageHeading,
  Section,
  TableScroll,
} from '../components/ui.js';
import { useDocumentTitle, usePaged } from '../hooks.js';
import { useApi } from '../session.js';
import type { AdminAuditEntry, Page } from '../types.js';

export function AuditPage() {
  useDocumentTitle('Audit log');
  const api = useApi();
  const audit = usePaged<AdminAuditEntry>('audit', (cursor) =>
    api.get<Page<AdminAuditEntry>>('/v1/admin/audit', { limit: 50, cursor }),
  );
  return (
    <>
      <PageHeading subtitle="Every write to the admin API, newest first.">Audit log</PageHeading>
      <Section
        title="Entries"
        actions={
          <button type="button" className="button" onClick={audit.reload} disabled={audit.loading}>
            Refresh
          </button>
        }
      >
        <ErrorAlert error={audit.error} />
        <ListState loaded={audit.loaded} count={audit.items.length} empty="No admin writes recorded yet." />
        {audit.items.length > 0 ? (
          <TableScroll label="Audit log table">
            <table className="table table-dense">
              <thead>
                <tr>
                  <th scope="col">At</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Method</th>
                  <th scope="col">Route</th>
                  <th scope="col">Target</th>
                  <th scope="col">Status</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Request ID</th>
                </tr>
              </thead>
              <tbody>
                {audit.items.map((entry) => (
                  <tr key={entry.id}>
                    <td className="nowrap">
                      <DateTime iso={entry.at} />
                    </td>
                    <td>
                      <code className="mono">{entry.actor}</code>
                    </td>
                    <td>
                      <span className="method">{entry.method}</span>
                    </td>
                    <td>
                      <code className="mono">{entry.route}</code>
                    </td>
                    <td>
                      {Object.keys(entry.target).length === 0 ? (
                        <span className="muted">—</span>
                      ) : (
                        <ul className="plain-list">
                          {Object.entries(entry.target).map(([name, value]) => (
                            <li key={name}>
                              <code className="mono">
                                {name}={value}
                              </code>
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
                      <code className="mono">{entry.requestId}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        ) : null}
        <LoadMore nextCursor={audit.nextCursor} loading={audit.loading} onLoadMore={audit.loadMore} />
      </Section>
    </>
  );
}
