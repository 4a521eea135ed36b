/** A paged list shown as a table: its error, "Loading…" or empty text, the rows and "Load more". */
import type { ReactNode } from 'react';
import type { PagedList } from '../hooks.js';
import { ErrorAlert, ListState, LoadMore, TableScroll } from './ui.js';

/**
 * The table appears once there are rows; `head` holds the header cells, `row` renders one item
 * (with its `key`; `index` is its place in the list, for lists whose items carry no id), and
 * `below` stands between the table and "Load more".
 */
export function PagedTable<T>({
  list,
  label,
  empty,
  dense = false,
  head,
  row,
  below,
}: {
  list: PagedList<T>;
  label: string;
  empty: string;
  dense?: boolean;
  head: ReactNode;
  row: (item: T, index: number) => ReactNode;
  below?: ReactNode;
}) {
  return (
    <>
      <ErrorAlert error={list.error} />
      <ListState loaded={list.loaded} count={list.items.length} empty={empty} />
      {list.items.length > 0 ? (
        <TableScroll label={label}>
          <table className={dense ? 'table table-dense' : 'table'}>
            <thead>
              <tr>{head}</tr>
            </thead>
            <tbody>{list.items.map((item, index) => row(item, index))}</tbody>
          </table>
        </TableScroll>
      ) : null}
      {below}
      <LoadMore nextCursor={list.nextCursor} loading={list.loading} onLoadMore={list.loadMore} />
    </>
  );
}
