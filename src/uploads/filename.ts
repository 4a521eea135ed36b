const MAX_FILENAME_BYTES = 200;
const MAX_KEPT_EXTENSION_LENGTH = 16;
const RESERVED_CHARACTERS = new Set(['<', '>', ':', '"', '|', '?', '*']);
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const encoder = new TextEncoder();

/**
 * Characters that are dropped outright: C0 and C1 controls and DEL (header and log injection),
 * bidirectional controls (a name that reads `invoice‮fdp.exe` but is `invoiceexe.pdf`) and
 * zero-width characters (names that look identical but differ), except the joiner inside an
 * emoji sequence (see `isKept`).
 */
function isDropped(codePoint: number): boolean {
  return (
    codePoint <= 0x1f ||
    (codePoint >= 0x7f && codePoint <= 0x9f) ||
    codePoint === 0x061c ||
    (codePoint >= 0x200b && codePoint <= 0x200f) ||
    (codePoint >= 0x202a && codePoint <= 0x202e) ||
    (codePoint >= 0x2066 && codePoint <= 0x2069) ||
    codePoint === 0xfeff
  );
}

function byteLength(text: string): number {
  return encoder.encode(text).byteLength;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character or a grapheme. */
function truncateToBytes(text: string, maxBytes: number): string {
  let result = '';
  let bytes = 0;
  for (const { segment } of graphemes.segment(text)) {
    const size = byteLength(segment);
    if (bytes + size > maxBytes) break;
    result += segment;
    bytes += size;
  }
  return result;
}

function trimSpacesAndDots(text: string): string {
  return text.replace(/^[ .]+|[ .]+$/g, '');
}

function capLength(name: string): string {
  if (byteLength(name) <= MAX_FILENAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? name.slice(dot) : '';
  if (extension.length - 1 > MAX_KEPT_EXTENSION_LENGTH || extension.length < 2) {
    return trimSpacesAndDots(truncateToBytes(name, MAX_FILENAME_BYTES));
  }
  const stem = trimSpacesAndDots(truncateToBytes(name.slice(0, dot), MAX_FILENAME_BYTES - byteLength(extension)));
  return stem === '' ? '' : `${stem}${extension}`;
}

const ZERO_WIDTH_JOINER = '\u200D';

const PICTOGRAPHIC = /^\p{Extended_Pictographic}$/u;

/**
 * Whether the character at `index` of a grapheme survives. A zero-width joiner is kept only where
 * it joins an emoji sequence (👩‍💻 is 👩 ZWJ 💻): a pictograph after it within the same grapheme,
 * which the segmenter allows only after a pictograph. Anywhere else it is invisible padding and
 * goes like the other zero-width characters.
 */
function isKept(characters: string[], index: number): boolean {
  const character = characters[index] ?? '';
  if (character === ZERO_WIDTH_JOINER) return PICTOGRAPHIC.test(characters[index + 1] ?? '');
  return !isDropped(character.codePointAt(0) ?? 0) && !RESERVED_CHARACTERS.has(character);
}

function clean(input: string): string {
  const lastSegment = input.split(/[/\\]/).pop() ?? '';
  let kept = '';
  for (const { segment } of graphemes.segment(lastSegment.normalize('NFC'))) {
    const characters = Array.from(segment);
    kept += characters.filter((_character, index) => isKept(characters, index)).join('');
  }
  return capLength(trimSpacesAndDots(kept.replace(/\s+/g, ' ')));
}

/**
 * Turns a client-supplied file name into one that is safe to store, log and send back in a
 * `Content-Disposition` header. The name is only ever a label: storage paths never contain it.
 *
 * Keeps the last path segment (clients send `C:\Users\…\report.pdf` or `../../etc/passwd`),
 * NFC-normalises it, drops control, bidirectional-override and zero-width characters and the
 * characters Windows reserves (`<>:"|?*`), collapses whitespace runs to one space, trims spaces
 * and dots at both ends (so the result is never `.` or `..` and has no hidden trailing dot), and
 * caps it at 200 UTF-8 bytes, keeping an extension of up to 16 characters. When nothing is left,
 * `fallback` (cleaned the same way, else `file`) is returned.
 *
 * @example
 * sanitizeFilename('..\\..\\Quarterly\u202Efdp.exe'); // 'Quarterlyfdp.exe'
 * sanitizeFilename('...', 'upload'); // 'upload'
 */
export function sanitizeFilename(input: string, fallback = 'file'): string {
  return clean(input) || clean(fallback) || 'file';
}
