/** The signed-in console: header with navigation and Sign out, one page at a time in `<main>`. */
import { useCallback, useState } from 'react';
import { errorMessage } from './api.js';
import { FlashContext } from './flash.js';
import { AgentPage } from './pages/agent.js';
import { AuditPage } from './pages/audit.js';
import { NotFoundPage } from './pages/not-found.js';
import { StatusPage } from './pages/status.js';
import { TenantPage } from './pages/tenant.js';
import { TenantUsagePage } from './pages/tenant-usage.js';
import { TenantsPage } from './pages/tenants.js';
import { navigate, parseHash, type Route, useHash } from './router.js';
import { useSession } from './session.js';

interface Flash {
  message: string;
  hash: string;
}

function normalHash(hash: string): string {
  return hash === '' || hash === '#' || hash === '#/' ? '#/tenants' : hash;
}

function section(route: Route): 'tenants' | 'status' | 'audit' | null {
  if (route.page === 'tenants' || route.page === 'tenant' || route.page === 'tenant-usage' || route.page === 'agent')
    return 'tenants';
  if (route.page === 'status' || route.page === 'audit') return route.page;
  return null;
}

function PageFor({ route }: { route: Route }) {
  switch (route.page) {
    case 'tenants':
      return <TenantsPage />;
    case 'tenant':
      return <TenantPage tenantId={route.tenantId} />;
    case 'tenant-usage':
      return <TenantUsagePage tenantId={route.tenantId} />;
    case 'agent':
      return <AgentPage agentId={route.agentId} />;
    case 'status':
      return <StatusPage />;
    case 'audit':
      return <AuditPage />;
    case 'not-found':
      return <NotFoundPage path={route.path} />;
  }
}

const NAV = [
  { key: 'tenants', label: 'Tenants', href: '#/tenants' },
  { key: 'status', label: 'Status', href: '#/status' },
  { key: 'audit', label: 'Audit log', href: '#/audit' },
] as const;

export function App() {
  const hash = normalHash(useHash());
  const route = parseHash(hash);
  const current = section(route);
  const { signOut } = useSession();
  const [flash, setFlash] = useState<Flash | null>(null);
  const [signOutError, setSignOutError] = useState<unknown>(null);
  const [signingOut, setSigningOut] = useState(false);

  const navigateWithMessage = useCallback((to: string, message: string) => {
    setFlash({ message, hash: normalHash(to.startsWith('#') ? to : `#${to}`) });
    navigate(to);
  }, []);

  async function onSignOut() {
    setSigningOut(true);
    setSignOutError(null);
    try {
      await signOut();
    } catch (error) {
      setSignOutError(error);
      setSigningOut(false);
    }
  }

  const flashMessage = flash !== null && flash.hash === hash ? flash.message : '';

  return (
    <FlashContext.Provider value={navigateWithMessage}>
      <header className="app-header">
        <div className="app-header-inner">
          <a className="brand" href="#/tenants">
            <span className="brand-mark" aria-hidden="true">
              M
            </span>
            <span className="brand-name">Mordn console</span>
          </a>
          <nav aria-label="Main" className="main-nav">
            <ul>
              {NAV.map((item) => (
                <li key={item.key}>
                  <a href={item.href} aria-current={current === item.key ? 'page' : undefined}>
                    {item.label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          <button type="button" className="button button-header" onClick={onSignOut} disabled={signingOut}>
            Sign out
          </button>
        </div>
        {signOutError === null ? null : (
          <div role="alert" className="alert alert-error header-alert">
            {errorMessage(signOutError)}
          </div>
        )}
      </header>
      <main className="app-main" id="content">
        <p role="status" aria-live="polite" className={flashMessage === '' ? 'flash flash-empty' : 'flash'}>
          {flashMessage}
        </p>
        <PageFor key={hash} route={route} />
      </main>
    </FlashContext.Provider>
  );
}
