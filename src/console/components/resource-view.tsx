/** One loaded resource's error, its "Loading…", then what it shows once loaded. */
import type { ReactNode } from 'react';
import type { Resource } from '../hooks.js';
import { ErrorAlert } from './ui.js';

/** `children` renders the data once there is some; until then "Loading…" while it loads. */
export function ResourceView<T>({ resource, children }: { resource: Resource<T>; children: (data: T) => ReactNode }) {
  return (
    <>
      <ErrorAlert error={resource.error} />
      {resource.data === undefined ? (
        resource.loading ? (
          <p className="muted">Loading…</p>
        ) : null
      ) : (
        children(resource.data)
      )}
    </>
  );
}
