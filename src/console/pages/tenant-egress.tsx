import { segment } from '../api.js';
import { PagedTable } from '../components/paged-table.js';
import { Badge, DateTime, RefreshButton, Section } from '../components/ui.js';
import { describeReason, hostPort } from '../egress.js';
import { formatBytes, formatCount } from '../format.js';
import { useApiList } from '../lists.js';
import { href } from '../router.js';
import type { EgressDecision } from '../types.js';

/** The tenant's sandbox egress decisions, newest first, fifty at a time. */
export function EgressSection({ tenantId }: { tenantId: string }) {
  const decisions = useApiList<EgressDecision>(`/v1/admin/tenants/${segment(tenantId)}/egress`);
  return (
    <Section
      title="Egress"
      description="Connections the sandboxes of this tenant's agents opened or were refused, newest first. Identical refusals within seconds share a row."
      actions={<RefreshButton loading={decisions.loading} onRefresh={decisions.reload} />}
    >
      <PagedTable
        list={decisions}
        label="Egress table"
        empty="No egress recorded. Each connection a sandbox opens or is refused is listed here."
        dense
        head={
          <>
            <th scope="col">At</th>
            <th scope="col">Agent</th>
            <th scope="col">User</th>
            <th scope="col">Destination</th>
            <th scope="col">Address</th>
            <th scope="col">Decision</th>
            <th scope="col">Reason</th>
            <th scope="col">Sent</th>
            <th scope="col">Received</th>
            <th scope="col">Count</th>
          </>
        }
        // Rows have no id, and pages only ever append (a reload starts over): the place is a stable key.
        row={(decision, index) => <EgressRow key={`${index}-${decision.at}`} decision={decision} />}
      />
    </Section>
  );
}

function EgressRow({ decision }: { decision: EgressDecision }) {
  const allowed = decision.decision === 'allowed';
  return (
    <tr>
      <td className="nowrap">
        <DateTime iso={decision.at} seconds />
      </td>
      <td>
        <a href={href({ page: 'agent', agentId: decision.agentId })}>
          <code className="mono">{decision.agentId}</code>
        </a>
      </td>
      <td>
        <code className="mono">{decision.userId}</code>
      </td>
      <td className="nowrap">
        <code className="mono">{hostPort(decision.host, decision.port)}</code>
      </td>
      <td className="nowrap">
        {decision.address === null ? (
          <span className="muted">Not resolved</span>
        ) : (
          <code className="mono">{decision.address}</code>
        )}
      </td>
      <td>
        <Badge tone={allowed ? 'ok' : 'bad'}>{allowed ? 'Allowed' : 'Refused'}</Badge>
      </td>
      <td>{allowed ? <span className="muted">—</span> : describeReason(decision.reason)}</td>
      <td className="nowrap">{allowed ? formatBytes(decision.bytesUp) : <span className="muted">—</span>}</td>
      <td className="nowrap">{allowed ? formatBytes(decision.bytesDown) : <span className="muted">—</span>}</td>
      <td>{formatCount(decision.count)}</td>
    </tr>
  );
}
