import { open } from 'node:fs/promises';
import { type FileTypeResult, fileTypeFromFile } from 'file-type';
import { inspectOoxml, type ZipLimits } from './inspect-ooxml.js';
import { inspectText, UNKNOWN_BINARY } from './inspect-text.js';
import { type Inspection, refuse } from './inspection.js';
import type { UploadMediaType } from './media-types.js';

export type { ZipLimits } from './inspect-ooxml.js';

export interface InspectOptions {
  /** The sanitised client file name: it only picks among text types, never overrides the bytes. */
  filename: string;
  /** The file's exact length in bytes, as counted while it was written. */
  size: number;
  /** Narrower bounds for unpacking Office documents. */
  limits?: Partial<ZipLimits>;
}

/** Images are taken on their signature; an animated PNG is still a PNG. */
const IMAGE_TYPES = new Map<string, UploadMediaType>([
  ['image/png', 'image/png'],
  ['image/apng', 'image/png'],
  ['image/jpeg', 'image/jpeg'],
  ['image/webp', 'image/webp'],
  ['image/gif', 'image/gif'],
]);

/** What file-type reports for a ZIP or any Office Open XML package, macro-enabled or not. */
const OFFICE_OR_ZIP = new Set([
  ...['zip', 'docx', 'docm', 'dotx', 'dotm', 'xlsx', 'xlsm', 'xltx', 'xltm'],
  ...['pptx', 'pptm', 'ppsx', 'ppsm', 'potx', 'potm'],
]);
const ARCHIVES = new Set([
  ...['tar', 'tar.gz', 'gz', 'bz2', 'xz', '7z', 'rar', 'zst', 'lz'],
  ...['lzh', 'lz4', 'Z', 'cab', 'ar', 'cpio', 'arj', 'ace'],
]);
const EXECUTABLES = new Set([
  ...['exe', 'elf', 'macho', 'class', 'wasm', 'swf', 'lnk'],
  ...['apk', 'jar', 'crx', 'xpi', 'deb', 'rpm', 'dmg'],
]);

async function readRange(filePath: string, position: number, length: number): Promise<Buffer> {
  const handle = await open(filePath, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** A PDF must start with a version header and end with `%%EOF` (anything after it within 1 KiB is tolerated). */
async function inspectPdf(filePath: string, size: number, head: Buffer): Promise<Inspection> {
  if (!/^%PDF-[12]\./.test(head.toString('latin1'))) {
    return refuse('application/pdf', 'The PDF has no valid version header');
  }
  const tailLength = Math.min(size, 1024);
  const tail = await readRange(filePath, size - tailLength, tailLength);
  if (!tail.includes('%%EOF')) return refuse('application/pdf', 'The PDF is incomplete (it has no end-of-file marker)');
  return { accepted: true, mediaType: 'application/pdf' };
}

/** file-type's guess; a parser failure on hostile bytes means "no known signature", not an error. */
async function detectSignature(filePath: string): Promise<FileTypeResult | undefined> {
  try {
    return await fileTypeFromFile(filePath);
  } catch (error) {
    if (error instanceof Error && 'syscall' in error) throw error;
    return undefined;
  }
}

function unsupportedReason({ ext: extension, mime }: FileTypeResult): string {
  if (IMAGE_TYPES.has(mime)) return 'The image is malformed';
  if (ARCHIVES.has(extension)) return 'Archives are not accepted';
  if (EXECUTABLES.has(extension)) return 'Executables and installable packages are not accepted';
  return 'This file format is not supported';
}

/**
 * Decides what an uploaded (or sandbox-published) file is from its bytes alone and maps it to
 * one canonical upload media type, or refuses it. The client's MIME type is never consulted, and
 * the file name only chooses among text types (CSV and plain text look alike). Which of the
 * accepted types a request may use is the caller's policy, not decided here.
 *
 * - PNG, JPEG, WebP and GIF are accepted on their signature; PDF also needs a `%PDF-1.`/`%PDF-2.`
 *   header and `%%EOF` in its last KiB.
 * - ZIPs go through `inspectOoxml`: only clean `.docx`, `.xlsx` and `.pptx` pass.
 * - Bytes with no known signature, or clean text that merely starts like one, go through
 *   `inspectText`.
 * - Everything else is refused: OLE2 compound files (legacy or password-protected Office),
 *   executables, archives and any other format.
 *
 * Bad input never throws: it becomes `{ accepted: false }`. Only I/O errors on the file do.
 *
 * @example
 * const inspection = await inspectFile(tempPath, { filename: 'q3.xlsx', size: 48213 });
 * if (!inspection.accepted) console.log(inspection.detectedType, inspection.reason);
 */
export async function inspectFile(filePath: string, options: InspectOptions): Promise<Inspection> {
  const detected = await detectSignature(filePath);
  if (detected === undefined) return inspectText(filePath, options);

  const head = await readRange(filePath, 0, Math.min(options.size, 8));
  const image = IMAGE_TYPES.get(detected.mime);
  // file-type takes any `GIF` prefix for an image; a real one says which version it is.
  const isImage = image !== undefined && (image !== 'image/gif' || /^GIF8[79]a/.test(head.toString('latin1')));
  if (isImage) return { accepted: true, mediaType: image };
  if (detected.mime === 'application/pdf') return inspectPdf(filePath, options.size, head);
  if (OFFICE_OR_ZIP.has(detected.ext)) return inspectOoxml(filePath, options.limits);
  if (detected.ext === 'cfb') {
    return refuse(
      'application/x-cfb',
      'Legacy Office files (.doc, .xls, .ppt) and password-protected Office files are not supported',
    );
  }

  // Some signatures are short and printable (`MZ`, `BM`, `%!`, `ID3`…), so text can start with
  // them: when the bytes are clean text, the text rules decide.
  const asText = await inspectText(filePath, options);
  if (asText.accepted || asText.detectedType !== UNKNOWN_BINARY) return asText;
  return refuse(detected.mime, unsupportedReason(detected));
}
