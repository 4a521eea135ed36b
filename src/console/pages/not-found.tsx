import { PageHeading } from '../components/ui.js';
import { useDocumentTitle } from '../hooks.js';

export function NotFoundPage({ path }: { path: string }) {
  useDocumentTitle('Not found');
  return (
    <>
      <PageHeading>Page not found</PageHeading>
      <p>
        There is no console page at <code className="mono">{path}</code>. Go to the <a href="#/tenants">tenants</a>.
      </p>
    </>
  );
}
