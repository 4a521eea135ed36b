import { type FormEvent, useId, useState } from 'react';
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
import { useDocumentTitle, usePaged } from '../hooks.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { Page, TenantRecord } from '../types.js';

export function TenantsPage() {
  useDocumentTitle('Tenants');
  const api = useApi();
  const id = useId();
  const tenants = usePaged<TenantRecord>('tenants', (cursor) =>
    api.get<Page<TenantRecord>>('/v1/admin/tenants', { limit: 50, cursor }),
  );
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
      const created = await api.post<TenantRecord>('/v1/admin/tenants', { name: trimmed });
      setName('');
      setStatus(`Tenant ${created.name} created.`);
      tenants.reload();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <PageHeading subtitle="Each tenant holds agents, their API keys, configuration and users' data.">
        Tenants
      </PageHeading>
      <Section title="New tenant">
        <form className="inline-form" onSubmit={create}>
          <div className="field">
            <label htmlFor={`${id}-name`}>Tenant name</label>
            <input
              id={`${id}-name`}
              value={name}
              required
              maxLength={200}
              onChange={(event) => setName(event.target.value)}
            />
          </div>
          <button type="submit" className="button button-primary" disabled={busy}>
            Create tenant
          </button>
        </form>
        <StatusText message={status} />
        <ErrorAlert error={error} />
      </Section>
      <Section title="All tenants">
        <ErrorAlert error={tenants.error} />
        <ListState
          loaded={tenants.loaded}
          count={tenants.items.length}
          empty="No tenants yet. Create the first one above."
        />
        {tenants.items.length > 0 ? (
          <TableScroll label="Tenants table">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">ID</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tenants.items.map((tenant) => (
                  <tr key={tenant.id}>
                    <td>
                      <a href={href({ page: 'tenant', tenantId: tenant.id })}>{tenant.name}</a>
                    </td>
                    <td>
                      <code className="mono">{tenant.id}</code>
                    </td>
                    <td>
                      <DateTime iso={tenant.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        ) : null}
        <LoadMore nextCursor={tenants.nextCursor} loading={tenants.loading} onLoadMore={tenants.loadMore} />
      </Section>
    </>
  );
}
