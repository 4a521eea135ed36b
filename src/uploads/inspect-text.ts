import { open } from 'node:fs/promises';
import { type Inspection, refuse } from './inspection.js';
import { MANAGED_UPLOAD_MAX_BYTES, TEXT_EXTENSIONS } from './media-types.js';

/** The detected type of bytes that are neither a recognised format nor text. */
export const UNKNOWN_BINARY = 'application/octet-stream';

/** Text is the one kind read whole into memory, so it has its own ceiling. */
const MAX_TEXT_BYTES = MANAGED_UPLOAD_MAX_BYTES;
const MAX_JSON_DEPTH = 64;
const SNIFF_WINDOW = 64 * 1024;

/**
 * First elements that make a text an HTML document. Elements Markdown itself often opens with
 * (`<p align="center">`, `<div>`, `<img>`) are deliberately absent: a README may start that way, and
 * no download is rendered (attachments, `nosniff`, a sandboxing CSP). docs/uploads.md lists these tags.
 */
export const HTML_TAGS: readonly string[] = [
  'html',
  'head',
  'body',
  'script',
  'iframe',
  'frameset',
  'frame',
  'object',
  'embed',
  'style',
  'title',
  'meta',
  'base',
  'link',
];

/** What an unsupported file name usually means, to name it in the refusal. */
const EXTENSION_TYPES = new Map<string, string>([
  ['html', 'text/html'],
  ['htm', 'text/html'],
  ['xhtml', 'application/xhtml+xml'],
  ['svg', 'image/svg+xml'],
  ['xml', 'application/xml'],
  ['sh', 'application/x-sh'],
  ['bash', 'application/x-sh'],
  ['zsh', 'application/x-sh'],
  ['js', 'text/javascript'],
  ['mjs', 'text/javascript'],
  ['py', 'text/x-python'],
]);

/** Interpreter (version suffix dropped) → what the script is. */
const SCRIPT_TYPES = new Map<string, string>([
  ['sh', 'application/x-sh'],
  ['bash', 'application/x-sh'],
  ['dash', 'application/x-sh'],
  ['zsh', 'application/x-sh'],
  ['ksh', 'application/x-sh'],
  ['python', 'text/x-python'],
  ['node', 'text/javascript'],
  ['perl', 'text/x-perl'],
  ['ruby', 'text/x-ruby'],
  ['php', 'application/x-httpd-php'],
]);

const MARKUP_REASONS = new Map<string, string>([
  ['text/html', 'HTML documents are not accepted'],
  ['application/xhtml+xml', 'HTML documents are not accepted'],
  ['image/svg+xml', 'SVG images are not accepted (they can carry scripts)'],
  ['application/xml', 'XML documents are not accepted'],
]);

async function readExactly(filePath: string, size: number): Promise<Buffer> {
  const handle = await open(filePath, 'r');
  try {
    const buffer = Buffer.alloc(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(buffer, filled, size - filled, filled);
      if (bytesRead === 0) throw new Error(`Expected ${size} bytes in the upload's temporary file, found ${filled}`);
      filled += bytesRead;
    }
    return buffer;
  } finally {
    await handle.close();
  }
}

/** The index just past the next `token` at or after `from`, or -1. */
function indexAfter(text: string, token: string, from: number): number {
  const index = text.indexOf(token, from);
  return index === -1 ? -1 : index + token.length;
}

/** The index just past the doctype at `at`, internal subset (`[…]`) included, or -1. */
function doctypeEnd(text: string, at: number): number {
  const close = text.indexOf('>', at);
  if (close === -1) return -1;
  const subset = text.slice(at, close).indexOf('[');
  if (subset === -1) return close + 1;
  const subsetEnd = text.indexOf(']', at + subset);
  return subsetEnd === -1 ? -1 : indexAfter(text, '>', subsetEnd);
}

/** Skips whitespace and comments (and, in XML, processing instructions and doctypes) from `position`. */
function skipProlog(text: string, position: number, isXml: boolean): number {
  let at = position;
  for (;;) {
    while (at < text.length && /\s/.test(text.charAt(at))) at += 1;
    const ahead = text.slice(at, at + 9).toLowerCase();
    let end = -1;
    if (ahead.startsWith('<!--')) end = indexAfter(text, '-->', at + 4);
    else if (isXml && ahead.startsWith('<?')) end = indexAfter(text, '?>', at + 2);
    else if (isXml && ahead === '<!doctype') end = doctypeEnd(text, at);
    if (end <= at) return at;
    at = end;
  }
}

/** The local name of the first element at `position` (`svg` for `<svg:svg …>`), lowercased. */
function elementNameAt(text: string, position: number): string | undefined {
  const match = /^<([A-Za-z_][\w.:-]*)/.exec(text.slice(position, position + 256));
  return match?.[1]?.split(':').pop()?.toLowerCase();
}

/**
 * What markup the text opens with, if any: HTML, SVG or another XML document. Only the start
 * counts (after whitespace and comments, within the first 64 KiB), which is where browsers and
 * other sniffers look; Markdown that merely contains `<div>` or `<img>` further down stays Markdown.
 */
function sniffMarkup(text: string): string | undefined {
  const window = text.slice(0, SNIFF_WINDOW);
  const start = skipProlog(window, 0, false);
  const head = window.slice(start, start + 32).toLowerCase();
  // A comment that never ends within the window: browsers sniff a leading `<!--` as HTML.
  if (head.startsWith('<!--')) return 'text/html';
  if (head.startsWith('<?xml') || head.startsWith('<!doctype')) {
    const doctype = /^<!doctype\s+([\w.:-]+)/.exec(head)?.[1];
    const root = doctype ?? elementNameAt(window, skipProlog(window, start, true));
    if (root === 'html') return head.startsWith('<?xml') ? 'application/xhtml+xml' : 'text/html';
    return root === 'svg' ? 'image/svg+xml' : 'application/xml';
  }
  const name = elementNameAt(window, start);
  if (name === 'svg') return 'image/svg+xml';
  return name !== undefined && HTML_TAGS.includes(name) ? 'text/html' : undefined;
}

/** `#!/usr/bin/env python3` → `text/x-python`; an interpreter we do not know is still a script. */
function scriptType(firstLine: string): string {
  const words = firstLine.slice(2).trim().split(/\s+/);
  const program =
    words[0]?.split('/').pop() === 'env' ? words.find((word, index) => index > 0 && !word.startsWith('-')) : words[0];
  const name = (program?.split('/').pop() ?? '').replace(/[\d.]+$/, '');
  return SCRIPT_TYPES.get(name) ?? 'text/x-script';
}

/**
 * Whether JSON text nests deeper than `maxDepth`, by counting brackets outside strings, so a
 * hostile `[[[[…` is refused before any parser recurses into it.
 */
function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const character = text.charCodeAt(index);
    if (inString) {
      if (character === 0x5c) index += 1;
      else if (character === 0x22) inString = false;
    } else if (character === 0x22) inString = true;
    else if (character === 0x5b || character === 0x7b) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (character === 0x5d || character === 0x7d) depth -= 1;
  }
  return false;
}

function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot > 0 ? filename.slice(dot + 1).toLowerCase() : '';
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Inspects bytes that no binary signature matched as text: they must be UTF-8 (a BOM is fine)
 * without NUL bytes, and must not open as HTML, SVG, XML or a script, whatever the name says
 * (only the start is checked, see `sniffMarkup`: markup further in is text like any other). The name
 * then picks the text type from `TEXT_EXTENSIONS` (the bytes cannot tell CSV from plain text);
 * a name outside that map is refused. JSON must parse and nest at most 64 levels deep.
 *
 * `size` is the file's exact length; larger than 10 MiB is refused without reading.
 *
 * @example
 * await inspectText('/tmp/upload-1', { filename: 'notes.md', size: 120 });
 * // { accepted: true, mediaType: 'text/markdown' }
 */
export async function inspectText(filePath: string, options: { filename: string; size: number }): Promise<Inspection> {
  if (options.size > MAX_TEXT_BYTES) {
    return refuse(UNKNOWN_BINARY, 'The file is not a recognised format, and text files over 10 MiB are not accepted');
  }
  const bytes = await readExactly(filePath, options.size);
  if (bytes.includes(0)) return refuse(UNKNOWN_BINARY, 'The file contains NUL bytes, so it is not UTF-8 text');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refuse(UNKNOWN_BINARY, 'The file is not a recognised format and is not valid UTF-8 text');
  }

  const markup = sniffMarkup(text);
  if (markup !== undefined) return refuse(markup, MARKUP_REASONS.get(markup) ?? 'Markup documents are not accepted');
  if (text.startsWith('#!')) return refuse(scriptType(text.split(/\r?\n/, 1)[0] ?? ''), 'Scripts are not accepted');

  const extension = extensionOf(options.filename);
  // An own-property check: `notes.constructor` must not find Object.prototype's.
  const mediaType = Object.hasOwn(TEXT_EXTENSIONS, extension) ? TEXT_EXTENSIONS[extension] : undefined;
  if (mediaType === undefined) {
    const supported = Object.keys(TEXT_EXTENSIONS).map((known) => `.${known}`);
    return refuse(
      EXTENSION_TYPES.get(extension) ?? 'text/plain',
      `The file is text, but its name does not end in a supported text extension (${supported.join(', ')})`,
    );
  }
  if (mediaType === 'application/json') {
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return refuse('application/json', `The JSON nests more than ${MAX_JSON_DEPTH} levels deep`);
    }
    if (!isJson(text)) return refuse('text/plain', 'The file is named .json but is not valid JSON');
  }
  return { accepted: true, mediaType };
}
