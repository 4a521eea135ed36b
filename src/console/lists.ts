/** The admin API's cursor-paginated lists, fifty to a page. */
import { type PagedList, usePaged } from './hooks.js';
import { useApi } from './session.js';
import type { Page } from './types.js';

/** The paged list at `path` (a `GET` with `limit` and `cursor`), with "Load more" and `reload()`. */
export function useApiList<T>(path: string): PagedList<T> {
  const api = useApi();
  return usePaged<T>(path, (cursor) => api.get<Page<T>>(path, { limit: 50, cursor }));
}
