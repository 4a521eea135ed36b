/** The frame of a tenant's or agent's page: breadcrumb, heading, then the loaded record. */
import type { ReactNode } from 'react';
import type { Resource } from '../hooks.js';
import { ResourceView } from './resource-view.js';
import { PageHeading } from './ui.js';

/** One link of the breadcrumb, after "Tenants". */
export interface Crumb {
  href: string;
  label: string;
}

/** "Tenants" › `crumbs` › `current`, the `<h1>` `title`, and `children` once `record` has loaded. */
export function DetailPage<T>({
  crumbs,
  current,
  title,
  record,
  children,
}: {
  crumbs: Crumb[];
  current: string;
  title: string;
  record: Resource<T>;
  children: (data: T) => ReactNode;
}) {
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <ol>
          <li>
            <a href="#/tenants">Tenants</a>
          </li>
          {crumbs.map((crumb) => (
            <li key={crumb.href}>
              <a href={crumb.href}>{crumb.label}</a>
            </li>
          ))}
          <li aria-current="page">{current}</li>
        </ol>
      </nav>
      <PageHeading>{title}</PageHeading>
      <ResourceView resource={record}>{children}</ResourceView>
    </>
  );
}
