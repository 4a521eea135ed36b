/** Loading hooks: one resource, or a cursor-paginated list with "Load more". */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { Page } from './types.js';

export interface Resource<T> {
  data: T | undefined;
  loading: boolean;
  error: unknown;
  reload: () => void;
  set: (data: T) => void;
}

/** Loads with `load` on mount and whenever `key` changes or `reload()` is called. */
export function useResource<T>(key: string, load: () => Promise<T>): Resource<T> {
  const loader = useRef(load);
  loader.current = load;
  const [data, setData] = useState<T | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [version, setVersion] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` and `version` are the triggers; the loader is read through a ref.
  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    loader.current().then(
      (value) => {
        if (!live) return;
        setData(value);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!live) return;
        setError(failure);
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [key, version]);
  const reload = useCallback(() => setVersion((each) => each + 1), []);
  return { data, loading, error, reload, set: setData };
}

export interface PagedList<T> {
  items: T[];
  nextCursor: string | null;
  loaded: boolean;
  loading: boolean;
  error: unknown;
  loadMore: () => void;
  reload: () => void;
}

/** The first page on mount (and on `key` change or `reload()`), further pages with `loadMore()`. */
export function usePaged<T>(key: string, load: (cursor: string | null) => Promise<Page<T>>): PagedList<T> {
  const loader = useRef(load);
  loader.current = load;
  const [items, setItems] = useState<T[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [version, setVersion] = useState(0);
  const generation = useRef(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` and `version` are the triggers; the loader is read through a ref.
  useEffect(() => {
    const mine = ++generation.current;
    setLoading(true);
    setError(null);
    loader.current(null).then(
      (page) => {
        if (generation.current !== mine) return;
        setItems(page.items);
        setNextCursor(page.nextCursor);
        setLoaded(true);
        setLoading(false);
      },
      (failure: unknown) => {
        if (generation.current !== mine) return;
        setError(failure);
        setLoading(false);
      },
    );
    return () => {
      generation.current += 1;
    };
  }, [key, version]);

  const cursor = useRef(nextCursor);
  cursor.current = nextCursor;
  const loadMore = useCallback(() => {
    const from = cursor.current;
    if (from === null) return;
    const mine = generation.current;
    setLoading(true);
    setError(null);
    loader.current(from).then(
      (page) => {
        if (generation.current !== mine) return;
        setItems((current) => [...current, ...page.items]);
        setNextCursor(page.nextCursor);
        setLoading(false);
      },
      (failure: unknown) => {
        if (generation.current !== mine) return;
        setError(failure);
        setLoading(false);
      },
    );
  }, []);
  const reload = useCallback(() => setVersion((each) => each + 1), []);
  return { items, nextCursor, loaded, loading, error, loadMore, reload };
}

/** Sets the document title for the page shown. */
export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = title === '' ? 'Mordn console' : `${title} · Mordn console`;
  }, [title]);
}
