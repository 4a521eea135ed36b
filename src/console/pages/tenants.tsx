import { DirectoryTable } from '../components/directory-table.js';
import { CreateByNameForm } from '../components/name-form.js';
import { PageHeading, Section } from '../components/ui.js';
import { useDocumentTitle } from '../hooks.js';
import { useApiList } from '../lists.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { TenantRecord } from '../types.js';

const PATH = '/v1/admin/tenants';

export function TenantsPage() {
  useDocumentTitle('Tenants');
  const api = useApi();
  const tenants = useApiList<TenantRecord>(PATH);

  async function create(name: string): Promise<string> {
    const created = await api.post<TenantRecord>(PATH, { name });
    tenants.reload();
    return `Tenant ${created.name} created.`;
  }

  return (
    <>
      <PageHeading subtitle="Each tenant holds agents, their API keys, configuration and users' data.">
        Tenants
      </PageHeading>
      <Section title="New tenant">
        <CreateByNameForm label="Tenant name" button="Create tenant" onCreate={create} />
      </Section>
      <Section title="All tenants">
        <DirectoryTable
          list={tenants}
          label="Tenants table"
          empty="No tenants yet. Create the first one above."
          hrefOf={(tenant) => href({ page: 'tenant', tenantId: tenant.id })}
        />
      </Section>
    </>
  );
}
