import { WorkspaceFileError } from '../backend.js';

/** Workspace ids are service-generated (`ws_…`); anything else is a bug, not user input. */
const WORKSPACE_ID = /^[a-z0-9_-]{1,64}$/;
const MAX_PATH_BYTES = 4096;
const MAX_NAME_BYTES = 255;
/** C0 and C1 controls, DEL, and lone surrogates (which have no UTF-8 encoding). */
const FORBIDDEN_CHARACTERS = /\p{Cc}|\p{Cs}/u;

/**
 * Throws unless `workspaceId` can safely name a directory: lower-case letters, digits, `_` and
 * `-` only, so it can never contain a separator, `..` or a dot-prefixed name the backend uses
 * for its own bookkeeping.
 */
export function requireWorkspaceId(workspaceId: string): void {
  if (typeof workspaceId !== 'string' || !WORKSPACE_ID.test(workspaceId)) {
    throw new TypeError('Invalid workspace id: expected 1-64 characters of [a-z0-9_-].');
  }
}

function invalid(message: string): WorkspaceFileError {
  return new WorkspaceFileError('INVALID_PATH', message);
}

/**
 * Checks a workspace-relative path before any sandbox starts, so a plainly hostile path costs
 * nothing. The helper inside the sandbox repeats these checks and, unlike this function, also
 * refuses symlinks; neither layer alone is the boundary.
 *
 * Accepted: relative, `/`-separated, non-empty components other than `.` and `..`, no control
 * characters, at most 4096 bytes (255 per component). With `allowRoot`, `''` and `'.'` name the
 * workspace root (listing it is the one operation that may).
 *
 * @returns the path unchanged, or `''` for the root.
 * @throws WorkspaceFileError `INVALID_PATH`
 */
export function checkWorkspacePath(path: string, options: { allowRoot?: boolean } = {}): string {
  if (typeof path !== 'string') throw invalid('The path must be a string.');
  if (options.allowRoot && (path === '' || path === '.')) return '';
  if (path === '') throw invalid('The path is empty.');
  if (FORBIDDEN_CHARACTERS.test(path)) throw invalid('The path contains control characters or invalid UTF-8.');
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) throw invalid('The path is longer than 4096 bytes.');
  if (path.startsWith('/')) throw invalid('The path must be relative to the workspace.');
  for (const component of path.split('/')) {
    if (component === '' || component === '.' || component === '..') {
      throw invalid("The path may not contain empty, '.' or '..' components.");
    }
    if (Buffer.byteLength(component, 'utf8') > MAX_NAME_BYTES) {
      throw invalid('A path component is longer than 255 bytes.');
    }
  }
  return path;
}
