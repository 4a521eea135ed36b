/** Hash routing (`#/tenants/<id>`, `#/tenants/<id>/usage`), so the server only ever serves index.html. */
import { useSyncExternalStore } from 'react';

export type Route =
  | { page: 'tenants' }
  | { page: 'tenant'; tenantId: string }
  | { page: 'tenant-usage'; tenantId: string }
  | { page: 'agent'; agentId: string }
  | { page: 'status' }
  | { page: 'audit' }
  | { page: 'not-found'; path: string };

function decode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

/** The route a location hash names; an empty hash is the tenant list. */
export function parseHash(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '' || path === 'tenants') return { page: 'tenants' };
  if (path === 'status') return { page: 'status' };
  if (path === 'audit') return { page: 'audit' };
  const parts = path.split('/');
  if (parts.length === 3 && parts[0] === 'tenants' && parts[2] === 'usage' && parts[1] !== undefined) {
    const id = decode(parts[1]);
    if (id !== undefined && id !== '') return { page: 'tenant-usage', tenantId: id };
  }
  if (parts.length === 2 && parts[1] !== undefined) {
    const id = decode(parts[1]);
    if (id !== undefined && id !== '') {
      if (parts[0] === 'tenants') return { page: 'tenant', tenantId: id };
      if (parts[0] === 'agents') return { page: 'agent', agentId: id };
    }
  }
  return { page: 'not-found', path: `/${path}` };
}

/** The link to a route. */
export function href(route: Route): string {
  switch (route.page) {
    case 'tenants':
      return '#/tenants';
    case 'tenant':
      return `#/tenants/${encodeURIComponent(route.tenantId)}`;
    case 'tenant-usage':
      return `#/tenants/${encodeURIComponent(route.tenantId)}/usage`;
    case 'agent':
      return `#/agents/${encodeURIComponent(route.agentId)}`;
    case 'status':
      return '#/status';
    case 'audit':
      return '#/audit';
    case 'not-found':
      return `#${route.path}`;
  }
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener('hashchange', onChange);
  return () => window.removeEventListener('hashchange', onChange);
}

function currentHash(): string {
  return window.location.hash;
}

/** The current location hash, re-rendering on every change. */
export function useHash(): string {
  return useSyncExternalStore(subscribe, currentHash, () => '');
}

export function navigate(to: string): void {
  window.location.hash = to.replace(/^#/, '');
}
