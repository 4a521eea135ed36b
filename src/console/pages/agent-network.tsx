import { useId } from 'react';
import { Badge, Code, Term } from '../components/ui.js';
import { describePorts, describeStanding, egressStanding } from '../egress.js';
import { formatBytes, formatCount } from '../format.js';
import { useResource } from '../hooks.js';
import { NETWORK_MODES, type NetworkEdits } from '../network-policy.js';
import { useApi } from '../session.js';
import type { ConsoleStatus, NetworkMode } from '../types.js';

const MODE_HINTS: Record<NetworkMode, string> = {
  none: "The workspace's code reaches no network.",
  packages: "The workspace's code reaches the operator's package index only (pip install).",
  allowlist: 'The package index and the hosts listed below.',
};

/**
 * The agent's `runtime.sandbox.network`: a mode and, for an allowlist, its entries one a line.
 * `problems` are the server's objections to the last save, shown under the control. Beside it, the
 * operator's ceiling for the agent's tenant, from the console status.
 */
export function NetworkField({
  tenantId,
  edits,
  problems,
  onChange,
}: {
  tenantId: string;
  edits: NetworkEdits;
  problems: string[];
  onChange: (edits: NetworkEdits) => void;
}) {
  const id = useId();
  const invalid = problems.length > 0;
  const errorsId = `${id}-errors`;
  return (
    <div className="network-field">
      <div className="field">
        <label htmlFor={`${id}-mode`}>Network</label>
        <select
          id={`${id}-mode`}
          value={edits.mode}
          onChange={(event) => onChange({ ...edits, mode: event.target.value as NetworkMode })}
          aria-describedby={`${id}-mode-hint ${id}-ceiling`}
          aria-invalid={invalid && edits.mode !== 'allowlist' ? true : undefined}
        >
          {NETWORK_MODES.map((mode) => (
            <option key={mode.value} value={mode.value}>
              {mode.label}
            </option>
          ))}
        </select>
        <span className="hint" id={`${id}-mode-hint`}>
          {MODE_HINTS[edits.mode]}
        </span>
      </div>
      {edits.mode === 'allowlist' ? (
        <div className="field">
          <label htmlFor={`${id}-allow`}>Allowed hosts</label>
          <textarea
            id={`${id}-allow`}
            className="mono"
            rows={5}
            spellCheck={false}
            autoComplete="off"
            value={edits.allowText}
            onChange={(event) => onChange({ ...edits, allowText: event.target.value })}
            aria-invalid={invalid ? true : undefined}
            aria-describedby={`${id}-allow-hint${invalid ? ` ${errorsId}` : ''}`}
          />
          <span className="hint" id={`${id}-allow-hint`}>
            One per line: a host (api.example.com), a wildcard over its subdomains (*.example.org) or an IP address,
            each with an optional port (files.example.net:8443). At most 64.
          </span>
        </div>
      ) : null}
      {invalid ? (
        <ul className="field-errors" id={errorsId}>
          {problems.map((problem) => (
            <li key={problem}>{problem}</li>
          ))}
        </ul>
      ) : null}
      <OperatorCeiling id={`${id}-ceiling`} tenantId={tenantId} />
    </div>
  );
}

/** Whether the operator lets egress out for the tenant, and the limits every policy meets. */
function OperatorCeiling({ id, tenantId }: { id: string; tenantId: string }) {
  const api = useApi();
  const status = useResource<ConsoleStatus>('status', () => api.get<ConsoleStatus>('/console/api/status'));
  if (status.data === undefined) {
    return (
      <p className="hint" id={id}>
        {status.loading
          ? "Reading the operator's network settings…"
          : "The operator's network settings could not be read."}
      </p>
    );
  }
  const standing = egressStanding(status.data.sandbox, tenantId);
  const egress = status.data.sandbox.egress;
  return (
    <div className="network-ceiling" id={id}>
      <p>
        <Badge tone={standing === 'open' ? 'ok' : 'neutral'}>
          {standing === 'open' ? 'Operator: on' : 'Operator: off'}
        </Badge>{' '}
        {describeStanding(standing)}
      </p>
      <dl className="ceiling-terms">
        <Term term="Package index">
          <Code>{egress.packageIndexUrl}</Code>
        </Term>
        <Term term="Allowed ports">{describePorts(egress.ports)}</Term>
        <Term term="Per workspace">
          {`${formatCount(egress.maxConnections)} connections at once, ${formatBytes(egress.bytesPerDay)} a day`}
        </Term>
      </dl>
    </div>
  );
}
