/**
 * Links in assistant text that point into the user's workspace instead of at a published file:
 * what models trained on hosted code interpreters write (`[report](sandbox:/mnt/data/report.xlsx)`,
 * `/workspace/out.csv`, `file:///mnt/data/x.png`, or a bare relative path that exists). Finding
 * them is pure text work, kept here; publishing or noting them is the chat engine's.
 */

/** Where a link target points, as far as text can tell. */
export type LinkTarget =
  /** A path in the workspace (relative to its root, never with `..`). */
  | { kind: 'workspace'; path: string }
  /** A relative path in a Markdown link: a workspace file only if it exists there. */
  | { kind: 'relative'; path: string }
  /** A workspace-style link that names something outside the workspace, or escapes it. */
  | { kind: 'outside' };

/** One workspace link found in text: the span it covers and what it says. */
export interface WorkspaceLink {
  /** Offsets of the whole span (`[label](target)`, `<target>` or the bare URL) in the text. */
  start: number;
  end: number;
  /** The label of a Markdown link; the target itself for an autolink or a bare URL. */
  label: string;
  target: LinkTarget;
}

/** Hosted interpreters' convention: `/mnt/data/NAME` is `NAME` at the workspace root. */
const WORKSPACE_ROOTS = ['/mnt/data/', '/workspace/'];

/** A relative path that stays inside the root it is resolved against, or undefined. */
function containedPath(path: string): string | undefined {
  const segments = path.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.length === 0 || segments.some((segment) => segment === '..')) return undefined;
  return segments.join('/');
}

function decoded(target: string): string | undefined {
  try {
    return decodeURIComponent(target);
  } catch {
    return undefined;
  }
}

/** `/workspace/x`, `/mnt/data/x` → `x`; another absolute path is outside. */
function absolutePath(path: string): LinkTarget {
  for (const root of WORKSPACE_ROOTS) {
    if (path.startsWith(root)) {
      const inside = containedPath(path.slice(root.length));
      return inside ? { kind: 'workspace', path: inside } : { kind: 'outside' };
    }
  }
  return { kind: 'outside' };
}

/**
 * What a link target means for the workspace, or undefined for a link that is not the
 * workspace's business (web URLs, anchors, mail, other schemes), which is left as it is.
 *
 * @example
 * classifyLinkTarget('sandbox:/mnt/data/report.xlsx'); // { kind: 'workspace', path: 'report.xlsx' }
 * classifyLinkTarget('file:///etc/passwd'); // { kind: 'outside' }
 * classifyLinkTarget('https://example.com/a.csv'); // undefined
 */
export function classifyLinkTarget(rawTarget: string): LinkTarget | undefined {
  const target = decoded(rawTarget.trim());
  if (target === undefined || target === '') return undefined;
  const lower = target.toLowerCase();
  if (lower.startsWith('sandbox:')) {
    const rest = target.slice('sandbox:'.length);
    if (rest.startsWith('/')) return absolutePath(rest);
    const inside = containedPath(rest);
    return inside ? { kind: 'workspace', path: inside } : { kind: 'outside' };
  }
  if (lower.startsWith('file://')) {
    const path = target.slice('file://'.length);
    return path.startsWith('/') ? absolutePath(path) : { kind: 'outside' };
  }
  if (target.startsWith('/workspace/') || target.startsWith('/mnt/data/')) return absolutePath(target);
  // Anything with a scheme (https:, mailto:, data:…), an anchor, a query or a network path is
  // not a workspace path; neither is an absolute path of the service's own site.
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || /^[#?]/.test(target) || target.startsWith('/')) return undefined;
  const inside = containedPath(target);
  return inside ? { kind: 'relative', path: inside } : { kind: 'outside' };
}

/** `[label](target)` (an image's leading `!` is part of the span), `<target>`, or a bare `sandbox:` URL. */
const LINK_PATTERN =
  /(!?)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"\n]*")?\s*\)|<((?:sandbox|file):[^>\s]+)>|\bsandbox:[^\s)\]>"'`]+/gi;

/**
 * The workspace links of a complete piece of text, in order: Markdown links and images, autolinks
 * of the `sandbox:` and `file:` schemes, and bare `sandbox:` URLs. Paths in prose are not links.
 */
export function findWorkspaceLinks(text: string): WorkspaceLink[] {
  const links: WorkspaceLink[] = [];
  for (const match of text.matchAll(LINK_PATTERN)) {
    const [matched, , label, markdownTarget, autolinkTarget] = match;
    // A bare URL does not take the punctuation that ends its sentence.
    const whole = (markdownTarget ?? autolinkTarget) ? matched : matched.replace(/[.,;:!?]+$/, '');
    const rawTarget = markdownTarget ?? autolinkTarget ?? whole;
    const target = classifyLinkTarget(rawTarget);
    // A bare relative path is a link only inside Markdown link syntax.
    if (!target || (target.kind === 'relative' && markdownTarget === undefined)) continue;
    const start = match.index ?? 0;
    links.push({ start, end: start + whole.length, label: label ?? rawTarget, target });
  }
  return links;
}

/** The most text held back while a link may still be unfinished. */
export const MAX_HELD_BYTES = 2048;

/** Where, in the unfinished last line, a link could have started and not yet ended. */
function openSpanStart(line: string): number | undefined {
  const candidates: number[] = [];
  const bracket = line.lastIndexOf('[');
  if (bracket >= 0) {
    // Open: the label is not closed yet, it is closed at the very end, or `(target` is not.
    const span = line.slice(bracket);
    const label = /^\[[^\]\n]*\]/.exec(span)?.[0];
    const after = label === undefined ? undefined : span.slice(label.length);
    if (after === undefined || after === '' || (after.startsWith('(') && !after.includes(')'))) {
      candidates.push(bracket);
    }
  }
  const angle = line.lastIndexOf('<');
  if (angle >= 0 && !line.slice(angle).includes('>')) candidates.push(angle);
  // A bare URL runs to the next space: one touching the end may still grow.
  const bare = /sandbox:[^\s)\]>"'`]*$/i.exec(line);
  if (bare) candidates.push(bare.index);
  // The text may end in the first letters of `sandbox:` (at the start of a word).
  for (let length = Math.min(7, line.length); length > 0; length -= 1) {
    const before = line.length - length - 1;
    if (before >= 0 && /\w/.test(line[before] as string)) continue;
    if ('sandbox:'.startsWith(line.slice(-length).toLowerCase())) {
      candidates.push(line.length - length);
      break;
    }
  }
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

/**
 * Holds back, from streamed text, only a span that may be an unfinished workspace link: from its
 * opening to the end of the line, at most `MAX_HELD_BYTES`. Everything before it passes at once.
 * `push` and `flush` return the text that may go on now, complete links included, for the caller
 * to split with `findWorkspaceLinks`.
 */
export function createLinkHoldback(maxHeldBytes = MAX_HELD_BYTES) {
  let held = '';
  return {
    push(delta: string): string {
      const text = held + delta;
      const lineStart = text.lastIndexOf('\n') + 1;
      const open = openSpanStart(text.slice(lineStart));
      if (open === undefined || Buffer.byteLength(text.slice(lineStart + open)) > maxHeldBytes) {
        held = '';
        return text;
      }
      held = text.slice(lineStart + open);
      return text.slice(0, lineStart + open);
    },
    /** The end of the answer: whatever is held goes on as it is. */
    flush(): string {
      const rest = held;
      held = '';
      return rest;
    },
  };
}
