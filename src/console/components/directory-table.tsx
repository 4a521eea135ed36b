/** The name, ID and created table of the tenants and agents lists. */
import type { PagedList } from '../hooks.js';
import { PagedTable } from './paged-table.js';
import { DateTime } from './ui.js';

/** One listed tenant or agent. */
export interface DirectoryEntry {
  id: string;
  name: string;
  createdAt: string;
}

/** Each entry's name links to its page (`hrefOf`), beside its ID and creation time. */
export function DirectoryTable<T extends DirectoryEntry>({
  list,
  label,
  empty,
  hrefOf,
}: {
  list: PagedList<T>;
  label: string;
  empty: string;
  hrefOf: (entry: T) => string;
}) {
  return (
    <PagedTable
      list={list}
      label={label}
      empty={empty}
      head={
        <>
          <th scope="col">Name</th>
          <th scope="col">ID</th>
          <th scope="col">Created</th>
        </>
      }
      row={(entry) => (
        <tr key={entry.id}>
          <td>
            <a href={hrefOf(entry)}>{entry.name}</a>
          </td>
          <td>
            <code className="mono">{entry.id}</code>
          </td>
          <td>
            <DateTime iso={entry.createdAt} />
          </td>
        </tr>
      )}
    />
  );
}
