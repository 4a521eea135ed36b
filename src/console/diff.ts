/**
 * Draft-vs-published comparison for agent configurations: both objects are flattened to dotted
 * paths of leaf values (arrays are leaves) and compared path by path. Pure.
 */

export type Leaf = string | number | boolean | null | readonly unknown[];

export interface FieldChange {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before: unknown;
  after: unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{ runtime: { sandbox: { enabled: true } } }` → `{ 'runtime.sandbox.enabled': true }`. */
export function flatten(value: unknown, prefix = ''): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!isPlainObject(value)) {
    if (prefix !== '') out.set(prefix, value);
    return out;
  }
  const keys = Object.keys(value);
  if (keys.length === 0 && prefix !== '') {
    out.set(prefix, {});
    return out;
  }
  for (const key of keys) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    const child = value[key];
    if (child === undefined) continue;
    if (isPlainObject(child) && Object.keys(child).length > 0) {
      for (const [nested, leaf] of flatten(child, path)) out.set(nested, leaf);
    } else {
      out.set(path, child);
    }
  }
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The fields that differ between `before` and `after`, sorted by path. */
export function diffObjects(before: unknown, after: unknown): FieldChange[] {
  const left = flatten(before);
  const right = flatten(after);
  const paths = new Set([...left.keys(), ...right.keys()]);
  const changes: FieldChange[] = [];
  for (const path of [...paths].sort()) {
    const had = left.has(path);
    const has = right.has(path);
    const a = left.get(path);
    const b = right.get(path);
    if (had && has && same(a, b)) continue;
    changes.push({ path, kind: !had ? 'added' : !has ? 'removed' : 'changed', before: a, after: b });
  }
  return changes;
}

/** Paths whose text is too long to show inline: only "changed" is said. */
const PROSE_PATHS = new Set(['instructions']);

function show(value: unknown): string {
  if (value === undefined) return 'not set';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'string') return JSON.stringify(value);
  return JSON.stringify(value);
}

function isProse(path: string, value: unknown): boolean {
  return typeof value === 'string' && (PROSE_PATHS.has(path) || value.length > 60 || value.includes('\n'));
}

/**
 * A list changed in place (an allowlist, accepted types): what it gained and lost, which stays
 * short however long the list is.
 */
function describeListChange(path: string, before: readonly unknown[], after: readonly unknown[]): string {
  const added = after.filter((item) => !before.some((each) => same(each, item)));
  const removed = before.filter((item) => !after.some((each) => same(each, item)));
  const parts = [
    ...(added.length > 0 ? [`added ${added.map(show).join(', ')}`] : []),
    ...(removed.length > 0 ? [`removed ${removed.map(show).join(', ')}`] : []),
  ];
  if (parts.length > 0) return `${path}: ${parts.join('; ')}`;
  // Same items: only their order or their repeats differ.
  return `${path}: ${before.length === after.length ? 'reordered' : 'changed'}`;
}

/**
 * One readable line per change: "runtime.sandbox.enabled: off → on", "instructions: changed",
 * "runtime.sandbox.network.allow: added "api.example.com"".
 */
export function describeChange(change: FieldChange): string {
  if (Array.isArray(change.before) && Array.isArray(change.after)) {
    return describeListChange(change.path, change.before, change.after);
  }
  if (isProse(change.path, change.before) || isProse(change.path, change.after)) {
    const word = change.kind === 'added' ? 'added' : change.kind === 'removed' ? 'removed' : 'changed';
    return `${change.path}: ${word}`;
  }
  return `${change.path}: ${show(change.before)} → ${show(change.after)}`;
}

/** The readable lines for a draft compared with what is published. */
export function describeDiff(published: unknown, draft: unknown): string[] {
  return diffObjects(published, draft).map(describeChange);
}
