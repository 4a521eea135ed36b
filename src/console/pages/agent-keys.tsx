import { type FormEvent, useId, useRef, useState } from 'react';
import { useAction } from '../action.js';
import { segment } from '../api.js';
import { PagedTable } from '../components/paged-table.js';
import { Badge, DateTime, ErrorAlert, Section, StatusText } from '../components/ui.js';
import { useApiList } from '../lists.js';
import { useApi } from '../session.js';
import type { ApiKeyItem, CreatedApiKey, Permission } from '../types.js';

const PERMISSIONS: { value: Permission; hint: string }[] = [
  { value: 'read', hint: 'history, downloads, bootstrap' },
  { value: 'write', hint: 'chat, uploads' },
];

export function KeysSection({ agentId }: { agentId: string }) {
  const api = useApi();
  const id = useId();
  const path = `/v1/admin/agents/${segment(agentId)}/keys`;
  const keys = useApiList<ApiKeyItem>(path);
  const [permissions, setPermissions] = useState<Record<Permission, boolean>>({ read: true, write: true });
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const { busy, status, error, setStatus, setError, run } = useAction();
  const secret = useRef<HTMLInputElement>(null);

  const chosen = PERMISSIONS.map((each) => each.value).filter((value) => permissions[value]);

  function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (chosen.length === 0) {
      setError('Choose at least one permission.');
      return;
    }
    void run(async () => {
      setCreated(null);
      const key = await api.post<CreatedApiKey>(path, { permissions: chosen });
      setCreated(key);
      setStatus('Key created.');
      keys.reload();
    });
  }

  async function copy() {
    if (created === null) return;
    try {
      await navigator.clipboard.writeText(created.key);
      setStatus('Key copied to the clipboard.');
    } catch {
      secret.current?.select();
      setStatus('Copying is not available here: the key is selected, copy it with the keyboard.');
    }
  }

  async function revoke(keyId: string) {
    setError(null);
    setStatus('');
    try {
      await api.delete(`/v1/admin/keys/${segment(keyId)}`);
      if (created?.id === keyId) setCreated(null);
      setStatus(`Key ${keyId} revoked.`);
      keys.reload();
    } catch (failure) {
      setError(failure);
    }
  }

  return (
    <Section title="Keys" description="API keys let the integrator's server call this agent's chat endpoint.">
      <form className="inline-form" onSubmit={create}>
        <fieldset className="checkbox-group">
          <legend>Permissions</legend>
          {PERMISSIONS.map((each) => (
            <div className="checkbox" key={each.value}>
              <input
                type="checkbox"
                id={`${id}-${each.value}`}
                checked={permissions[each.value]}
                onChange={(event) => setPermissions({ ...permissions, [each.value]: event.target.checked })}
                aria-describedby={`${id}-${each.value}-hint`}
              />
              <label htmlFor={`${id}-${each.value}`}>{each.value}</label>
              <span className="hint" id={`${id}-${each.value}-hint`}>
                ({each.hint})
              </span>
            </div>
          ))}
        </fieldset>
        <button type="submit" className="button button-primary" disabled={busy}>
          Create key
        </button>
      </form>
      {created === null ? null : (
        <div className="callout callout-success">
          <label htmlFor={`${id}-secret`}>New API key</label>
          <div className="copy-row">
            <input
              ref={secret}
              id={`${id}-secret`}
              className="mono"
              readOnly
              value={created.key}
              aria-describedby={`${id}-secret-note`}
              onFocus={(event) => event.currentTarget.select()}
            />
            <button type="button" className="button" onClick={copy}>
              Copy
            </button>
          </div>
          <p id={`${id}-secret-note`} className="callout-note">
            Store this key now: it will not be shown again.
          </p>
        </div>
      )}
      <StatusText message={status} />
      <ErrorAlert error={error} />
      <PagedTable
        list={keys}
        label="Keys table"
        empty="No keys yet."
        head={
          <>
            <th scope="col">Key ID</th>
            <th scope="col">Permissions</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </>
        }
        row={(key) => (
          <tr key={key.id}>
            <td>
              <code className="mono">{key.id}</code>
            </td>
            <td>{key.permissions.join(', ')}</td>
            <td>
              <DateTime iso={key.createdAt} />
            </td>
            <td>
              {key.lastUsedAt === null ? <span className="muted">Never</span> : <DateTime iso={key.lastUsedAt} />}
            </td>
            <td>
              {key.revokedAt === null ? (
                <Badge tone="ok">Active</Badge>
              ) : (
                <>
                  <Badge tone="neutral">Revoked</Badge> <DateTime iso={key.revokedAt} />
                </>
              )}
            </td>
            <td className="actions">
              {key.revokedAt === null ? (
                <button
                  type="button"
                  className="button button-small button-danger-outline"
                  onClick={() => revoke(key.id)}
                >
                  Revoke
                </button>
              ) : null}
            </td>
          </tr>
        )}
      />
    </Section>
  );
}
