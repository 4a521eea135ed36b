/**
 * Pure wording for the chat component: sizes, accepted types and tool names in plain words. No
 * React here, so these rules are unit-tested on their own and shared by every part of the UI.
 */

const KB = 1024;
const MB = 1024 * 1024;

/**
 * A byte count as people read it: `512 B`, `3.4 KB`, `10.0 MB`.
 *
 * @example formatBytes(34); // '34 B'
 */
export function formatBytes(bytes: number): string {
  if (bytes < KB) return `${bytes} B`;
  if (bytes < MB) return `${(bytes / KB).toFixed(1)} KB`;
  return `${(bytes / MB).toFixed(1)} MB`;
}

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

/** Short names for the media types Mordn accepts; anything else falls back to its subtype. */
const TYPE_NAMES: Record<string, string> = {
  'application/pdf': 'PDF',
  'text/csv': 'CSV',
  'text/tab-separated-values': 'TSV',
  'text/plain': 'text',
  'text/markdown': 'Markdown',
  'application/json': 'JSON',
  [DOCX]: 'Word',
  [XLSX]: 'Excel',
  [PPTX]: 'PowerPoint',
};

/** The same short names for the extensions a picker may list beside the types. */
const EXTENSION_NAMES: Record<string, string> = {
  pdf: 'PDF',
  csv: 'CSV',
  tsv: 'TSV',
  txt: 'text',
  md: 'Markdown',
  markdown: 'Markdown',
  json: 'JSON',
  docx: 'Word',
  xlsx: 'Excel',
  pptx: 'PowerPoint',
  png: 'images',
  jpg: 'images',
  jpeg: 'images',
  webp: 'images',
  gif: 'images',
};

/** One entry of a picker's `accept` list (a MIME type, `type/*` or `.ext`) in plain words. */
function typeName(entry: string): string {
  const lower = entry.toLowerCase();
  if (lower.startsWith('image/')) return 'images';
  if (lower.startsWith('.')) return EXTENSION_NAMES[lower.slice(1)] ?? lower.slice(1).toUpperCase();
  const known = TYPE_NAMES[lower];
  if (known) return known;
  const subtype = lower.split('/')[1] ?? lower;
  return subtype === '*' ? `${lower.split('/')[0]} files` : subtype.toUpperCase();
}

/**
 * An `accept` list as a short, readable phrase with no MIME types in it.
 *
 * @example describeAccepted(['image/png', 'image/jpeg', 'application/pdf', 'text/csv']); // 'images, PDF, CSV'
 */
export function describeAccepted(accept: readonly string[]): string {
  return [...new Set(accept.map(typeName))].join(', ');
}

/**
 * The sentence shown when a file's type is refused (by the picker's hint or by the server).
 *
 * @example unsupportedTypeMessage('notes.exe', ['application/pdf']); // 'notes.exe: this file type is not accepted. Accepted: PDF.'
 */
export function unsupportedTypeMessage(filename: string, accept: readonly string[]): string {
  const accepted = describeAccepted(accept);
  return `${filename}: this file type is not accepted.${accepted ? ` Accepted: ${accepted}.` : ''}`;
}

/** The sentence shown when a file is larger than the picker's hint allows. */
export function tooLargeMessage(filename: string, maxBytes: number): string {
  return `${filename} is too large: files can be up to ${formatBytes(maxBytes)}.`;
}

/**
 * Whether a file matches a picker `accept` list (`type/*`, exact MIME types, `.ext` suffixes).
 * A file the browser could not type is let through: the server inspects every upload anyway.
 */
export function isAccepted(file: { name: string; type: string }, accept: readonly string[]): boolean {
  if (accept.length === 0 || file.type === '') return true;
  const name = file.name.toLowerCase();
  const type = file.type.toLowerCase();
  return accept.some((entry) => {
    const wanted = entry.toLowerCase().trim();
    if (wanted.startsWith('.')) return name.endsWith(wanted);
    if (wanted.endsWith('/*')) return type.startsWith(wanted.slice(0, -1));
    return type === wanted;
  });
}

/** Mordn's sandbox tools, named for the person watching rather than the model. */
const TOOL_NAMES: Record<string, string> = {
  sandbox_exec: 'Running code',
  sandbox_import_file: 'Importing a file',
  sandbox_publish_file: 'Publishing a file',
  sandbox_write_file: 'Writing a file',
  sandbox_read_file: 'Reading a file',
  sandbox_list_files: 'Listing files',
};

/**
 * A tool's name in plain words: Mordn's sandbox tools by what they do, any other tool by its name
 * with separators turned into spaces.
 *
 * @example toolLabel('sandbox_exec'); // 'Running code'
 * @example toolLabel('search_web'); // 'Search web'
 */
export function toolLabel(toolName: string): string {
  const known = TOOL_NAMES[toolName];
  if (known) return known;
  const words = toolName.replace(/[_\-.]+/g, ' ').trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : 'A tool';
}

/** Where a tool call stands, as the UI shows it. */
export type ToolProgress = 'running' | 'done' | 'failed' | 'stopped';

/** The word shown beside a tool's label for each progress. */
export const TOOL_PROGRESS_TEXT: Record<ToolProgress, string> = {
  running: 'in progress',
  done: 'done',
  failed: 'failed',
  stopped: 'stopped',
};

/**
 * An AI SDK tool part folded into running / done / failed / stopped. A preliminary result (live
 * output) is still running while its answer runs, and stopped once the answer no longer does (the
 * user stopped it, or its stream ended); a result marked `isError` (how Mordn's sandbox tools
 * report a failure to the model) counts as failed, not done.
 */
export function toolProgress(
  part: { state: string; output?: unknown; preliminary?: boolean },
  answerRunning = true,
): ToolProgress {
  if (part.state === 'output-error' || part.state === 'output-denied') return 'failed';
  if (part.state !== 'output-available' || part.preliminary) return answerRunning ? 'running' : 'stopped';
  const output = part.output as { isError?: unknown } | null | undefined;
  return output?.isError === true ? 'failed' : 'done';
}
