/**
 * What text costs on the wire when it travels as JSON text inside a JSON message: a tool result's
 * `text` is `JSON.stringify(value)`, and the JSON-RPC response escapes that string once more. A
 * control byte becomes `\u0001` and then `\\u0001` (7 bytes), a quote `\"` and then `\\\"` (4).
 * A progress notification's message is escaped once; cuts by plain UTF-8 length are here too.
 */

const HIGH_SURROGATE_FIRST = 0xd800;
const LOW_SURROGATE_FIRST = 0xdc00;
const LOW_SURROGATE_LAST = 0xdfff;

function isHighSurrogate(code: number): boolean {
  return code >= HIGH_SURROGATE_FIRST && code < LOW_SURROGATE_FIRST;
}

function isLowSurrogate(code: number): boolean {
  return code >= LOW_SURROGATE_FIRST && code <= LOW_SURROGATE_LAST;
}

/**
 * Bytes the UTF-16 code unit at `index` of `text` takes once the string has been serialized with
 * `JSON.stringify` and that JSON text serialized again as a JSON string, in UTF-8.
 */
export function doublyEscapedUnitBytes(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if (code === 0x22 || code === 0x5c) return 4;
  // \b \t \n \f \r have two-character escapes; every other control character a \u00XX one.
  if (code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return 3;
  if (code < 0x20) return 7;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (isHighSurrogate(code)) return isLowSurrogate(text.charCodeAt(index + 1)) ? 2 : 7;
  if (isLowSurrogate(code)) return isHighSurrogate(text.charCodeAt(index - 1)) ? 2 : 7;
  return 3;
}

/** Bytes `text` takes as a JSON string value inside JSON text inside a JSON string, quotes included. */
export function doublyEscapedStringBytes(text: string): number {
  // Each quote of the inner JSON string is escaped once more: `\"` is 2 bytes.
  let bytes = 4;
  for (let index = 0; index < text.length; index += 1) bytes += doublyEscapedUnitBytes(text, index);
  return bytes;
}

/**
 * Bytes the UTF-16 code unit at `index` of `text` takes in UTF-8 once the string has been
 * serialized with `JSON.stringify` (once): a quote is `\"`, a control byte `\u0001`.
 */
export function escapedUnitBytes(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if (code === 0x22 || code === 0x5c) return 2;
  if (code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return 2;
  if (code < 0x20) return 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (isHighSurrogate(code)) return isLowSurrogate(text.charCodeAt(index + 1)) ? 2 : 6;
  if (isLowSurrogate(code)) return isHighSurrogate(text.charCodeAt(index - 1)) ? 2 : 6;
  return 3;
}

/** Bytes the UTF-16 code unit at `index` of `text` takes in UTF-8 (a lone surrogate as U+FFFD). */
export function utf8UnitBytes(text: string, index: number): number {
  const code = text.charCodeAt(index);
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (isHighSurrogate(code)) return isLowSurrogate(text.charCodeAt(index + 1)) ? 2 : 3;
  if (isLowSurrogate(code)) return isHighSurrogate(text.charCodeAt(index - 1)) ? 2 : 3;
  return 3;
}

type UnitCost = (text: string, index: number) => number;

/**
 * The longest prefix of `text` whose characters cost at most `maxBytes` by `unitCost`, never ending
 * between the two halves of a surrogate pair.
 */
function prefixWithin(text: string, maxBytes: number, unitCost: UnitCost): string {
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const cost = unitCost(text, end);
    if (bytes + cost > maxBytes) break;
    bytes += cost;
    end += 1;
  }
  if (end > 0 && end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return text.slice(0, end);
}

/**
 * The longest prefix of `text` whose characters cost at most `maxBytes` doubly escaped (quotes not
 * counted), never ending between the two halves of a surrogate pair.
 */
export function prefixWithinDoublyEscapedBytes(text: string, maxBytes: number): string {
  return prefixWithin(text, maxBytes, doublyEscapedUnitBytes);
}

/** The longest prefix of `text` costing at most `maxBytes` as a JSON string value (quotes not counted). */
export function prefixWithinEscapedBytes(text: string, maxBytes: number): string {
  return prefixWithin(text, maxBytes, escapedUnitBytes);
}

/** The longest prefix of `text` taking at most `maxBytes` in UTF-8. */
export function prefixWithinUtf8Bytes(text: string, maxBytes: number): string {
  return prefixWithin(text, maxBytes, utf8UnitBytes);
}

/**
 * Where the shortest tail of `text` taking at least `minBytes` in UTF-8 begins (0 when all of it
 * takes less), never between the two halves of a surrogate pair.
 */
export function startOfUtf8Tail(text: string, minBytes: number): number {
  let bytes = 0;
  let start = text.length;
  while (start > 0 && bytes < minBytes) {
    start -= 1;
    bytes += utf8UnitBytes(text, start);
  }
  if (start > 0 && isLowSurrogate(text.charCodeAt(start)) && isHighSurrogate(text.charCodeAt(start - 1))) start -= 1;
  return start;
}

/** Bytes of any JSON value serialized, then serialized again as a JSON string (outer quotes not counted). */
export function doublyEscapedJsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(JSON.stringify(value))) - 2;
}
