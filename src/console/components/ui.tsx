/** Small shared pieces: headings that take focus, alerts, live status text, tables' helpers. */
import { Fragment, type ReactNode, useEffect, useId, useRef } from 'react';
import { errorMessage } from '../api.js';
import { formatDateTime, formatDateTimeSeconds } from '../format.js';

/** The page's one `<h1>`; it takes focus when the page opens, so navigation is announced. */
export function PageHeading({ children, subtitle }: { children: ReactNode; subtitle?: ReactNode }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  return (
    <div className="page-heading">
      <h1 ref={heading} tabIndex={-1}>
        {children}
      </h1>
      {subtitle === undefined ? null : <p className="page-subtitle">{subtitle}</p>}
    </div>
  );
}

/** An error, announced at once; nothing when there is none. */
export function ErrorAlert({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <div role="alert" className="alert alert-error">
      {typeof error === 'string' ? error : errorMessage(error)}
    </div>
  );
}

/** A polite live region, always present so that its changes are announced. */
export function StatusText({ message, className }: { message: string; className?: string }) {
  return (
    <p role="status" aria-live="polite" className={`status-text${className ? ` ${className}` : ''}`}>
      {message}
    </p>
  );
}

/** A titled section of a page, named by its `<h2>`. */
export function Section({
  title,
  children,
  actions,
  description,
}: {
  title: string;
  children: ReactNode;
  actions?: ReactNode;
  description?: ReactNode;
}) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <div className="card-header">
        <div>
          <h2 id={id}>{title}</h2>
          {description === undefined ? null : <p className="card-description">{description}</p>}
        </div>
        {actions === undefined ? null : <div className="card-actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

/**
 * An identifier in a code chip, never broken inside a word: with `breakAfter` it may wrap only
 * after those characters (a route after its slashes), otherwise not at all.
 *
 * @example
 * <Chip text="/v1/admin/agents/:agentId/config" breakAfter="/" />
 */
export function Chip({ text, breakAfter }: { text: string; breakAfter?: string }) {
  if (breakAfter === undefined) return <code className="mono chip chip-whole">{text}</code>;
  const pieces: Array<{ at: number; text: string }> = [];
  let start = 0;
  for (let at = 0; at < text.length; at += 1) {
    if (breakAfter.includes(text.charAt(at))) {
      pieces.push({ at: start, text: text.slice(start, at + 1) });
      start = at + 1;
    }
  }
  if (start < text.length) pieces.push({ at: start, text: text.slice(start) });
  return (
    <code className="mono chip">
      {pieces.map((piece) => (
        <Fragment key={piece.at}>
          {piece.text}
          <wbr />
        </Fragment>
      ))}
    </code>
  );
}

/** An instant in the browser's locale; `seconds` adds them (logs whose entries come seconds apart). */
export function DateTime({ iso, seconds = false }: { iso: string; seconds?: boolean }) {
  return <time dateTime={iso}>{seconds ? formatDateTimeSeconds(iso) : formatDateTime(iso)}</time>;
}

export function LoadMore({
  nextCursor,
  loading,
  onLoadMore,
}: {
  nextCursor: string | null;
  loading: boolean;
  onLoadMore: () => void;
}) {
  if (nextCursor === null) return null;
  return (
    <div className="load-more">
      <button type="button" className="button" onClick={onLoadMore} disabled={loading}>
        {loading ? 'Loading…' : 'Load more'}
      </button>
    </div>
  );
}

/** "Loading…" while the first page loads, the empty text once it loaded with nothing. */
export function ListState({ loaded, empty, count }: { loaded: boolean; empty: string; count: number }) {
  if (!loaded) return <p className="muted">Loading…</p>;
  if (count === 0) return <p className="empty">{empty}</p>;
  return null;
}

/** A section's "Refresh" action, disabled while it loads. */
export function RefreshButton({ loading, onRefresh }: { loading: boolean; onRefresh: () => void }) {
  return (
    <button type="button" className="button" onClick={onRefresh} disabled={loading}>
      Refresh
    </button>
  );
}

/** One term and its description in a `<dl>`. */
export function Term({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

export function Badge({ tone, children }: { tone: 'ok' | 'bad' | 'warn' | 'neutral'; children: ReactNode }) {
  return <span className={`badge badge-${tone}`}>{children}</span>;
}

export function Code({ children }: { children: ReactNode }) {
  return <code className="mono">{children}</code>;
}

/**
 * A table's horizontal scroller for narrow screens. It is focusable so that keyboard users can
 * scroll it (WCAG 2.1.1), hence a named region.
 */
export function TableScroll({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
