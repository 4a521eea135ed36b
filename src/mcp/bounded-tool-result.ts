import type { CallToolResult } from '@modelcontextprotocol/server';
import { doublyEscapedJsonBytes, doublyEscapedStringBytes, prefixWithinDoublyEscapedBytes } from './json-text-cost.js';

/** Ends every string a result had to cut, so the model sees where its view stops. */
export const TRUNCATION_MARKER = '…[truncated]';

export interface BoundedToolResultOptions {
  /** The most bytes the serialized result (`JSON.stringify(result)`, UTF-8) may take. */
  maxBytes: number;
  /** Applied to every string of the value (redaction) before anything is measured or cut. */
  filter: (text: string) => string;
  /** Marks the result as a tool error. */
  isError?: boolean;
}

type JsonObject = { [key: string]: unknown };

/** A string or array held directly by an object of the value: what can be cut. */
interface Cuttable {
  owner: JsonObject;
  key: string;
  bytes: number;
}

const MARKER_BYTES = doublyEscapedStringBytes(TRUNCATION_MARKER) - 4;
/** `,\"truncated\":true` inside the text. */
const FLAG_BYTES = Buffer.byteLength(JSON.stringify(',"truncated":true')) - 2;
const STRUCTURED_KEY_BYTES = Buffer.byteLength(',"structuredContent":');
/** Cuts measured against a cost model are checked by serializing; a miss shrinks the room and retries. */
const MAX_ATTEMPTS = 3;

function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, mapStrings(child, map)]));
  }
  return value;
}

function collectCuttables(object: JsonObject, found: Cuttable[]): Cuttable[] {
  for (const [key, child] of Object.entries(object)) {
    if (typeof child === 'string') found.push({ owner: object, key, bytes: doublyEscapedStringBytes(child) });
    else if (Array.isArray(child)) found.push({ owner: object, key, bytes: doublyEscapedJsonBytes(child) });
    else if (child !== null && typeof child === 'object') collectCuttables(child as JsonObject, found);
  }
  return found;
}

/** The largest share every cuttable may keep so that together they take at most `room` bytes. */
function waterLevel(sizes: number[], room: number): number {
  const sorted = [...sizes].sort((a, b) => a - b);
  let remaining = room;
  for (let index = 0; index < sorted.length; index += 1) {
    const share = Math.floor(remaining / (sorted.length - index));
    if ((sorted[index] as number) > share) return share;
    remaining -= sorted[index] as number;
  }
  return Number.POSITIVE_INFINITY;
}

function cutString(text: string, maxBytes: number): string {
  const room = maxBytes - 4 - MARKER_BYTES;
  return room < 0 ? '' : `${prefixWithinDoublyEscapedBytes(text, room)}${TRUNCATION_MARKER}`;
}

/** The leading items of `items` that fit in `maxBytes` as a JSON array: whole items only. */
function cutArray(items: unknown[], maxBytes: number): unknown[] {
  let bytes = 2;
  let kept = 0;
  for (const item of items) {
    const cost = doublyEscapedJsonBytes(item) + (kept > 0 ? 1 : 0);
    if (bytes + cost > maxBytes) break;
    bytes += cost;
    kept += 1;
  }
  return items.slice(0, kept);
}

/** Cuts the largest strings and arrays of `value` (a copy) until its text fits in `room` bytes. */
function shrink(value: JsonObject, room: number): JsonObject {
  const copy = structuredClone(value);
  const cuttables = collectCuttables(copy, []);
  const cuttableBytes = cuttables.reduce((sum, cuttable) => sum + cuttable.bytes, 0);
  const fixedBytes = doublyEscapedJsonBytes(copy) - cuttableBytes;
  const level = waterLevel(
    cuttables.map((cuttable) => cuttable.bytes),
    room - fixedBytes - FLAG_BYTES,
  );
  for (const cuttable of cuttables) {
    if (cuttable.bytes <= level) continue;
    const current = cuttable.owner[cuttable.key];
    cuttable.owner[cuttable.key] =
      typeof current === 'string' ? cutString(current, level) : cutArray(current as unknown[], level);
  }
  copy.truncated = true;
  return copy;
}

function textResult(value: JsonObject, isError: boolean): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], ...(isError ? { isError: true } : {}) };
}

function serializedBytes(result: CallToolResult): number {
  return Buffer.byteLength(JSON.stringify(result));
}

/** What is left when even the cut value does not fit: that it did not, and an error's code. */
function notice(value: JsonObject, maxBytes: number): JsonObject {
  const error = value.error as { code?: unknown } | undefined;
  const code = typeof error?.code === 'string' && error.code.length <= 64 ? error.code : undefined;
  return {
    ...(code ? { error: { code, message: 'The error was too long to return.' } } : {}),
    truncated: true,
    message: `The result did not fit in ${maxBytes} bytes.`,
  };
}

/**
 * A tool result carrying `value` (redacted by `filter`) as JSON text, whose serialized form fits in
 * `maxBytes`, however the content escapes. The value travels twice — as text and as
 * `structuredContent` — only while both fit; past that only the text is sent, and when even that
 * is too large the longest strings and arrays are cut (strings end with `TRUNCATION_MARKER`,
 * arrays keep their leading items) and the value gets `truncated: true`. Costs count JSON
 * escaping twice over, as the text is a JSON string inside the JSON-RPC message.
 *
 * @example
 * boundedToolResult({ stdout: '\u0000'.repeat(1e6) }, { maxBytes: 64 * 1024, filter: (text) => text });
 * // → { content: [{ type: 'text', text: '{"stdout":"\\u0000…\\u0000…[truncated]","truncated":true}' }] }
 */
export function boundedToolResult(value: JsonObject, options: BoundedToolResultOptions): CallToolResult {
  const isError = options.isError === true;
  const scrubbed = mapStrings(value, options.filter) as JsonObject;
  const text = JSON.stringify(scrubbed);
  const envelopeBytes = serializedBytes(textResult({}, isError)) - 2;
  const textOnlyBytes = envelopeBytes + Buffer.byteLength(JSON.stringify(text));
  if (textOnlyBytes + STRUCTURED_KEY_BYTES + Buffer.byteLength(text) <= options.maxBytes) {
    return {
      content: [{ type: 'text', text }],
      structuredContent: scrubbed,
      ...(isError ? { isError: true } : {}),
    };
  }
  if (textOnlyBytes <= options.maxBytes)
    return { content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}) };

  let room = options.maxBytes - envelopeBytes;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    const result = textResult(shrink(scrubbed, room), isError);
    const overshoot = serializedBytes(result) - options.maxBytes;
    if (overshoot <= 0) return result;
    room -= overshoot;
  }
  return textResult(notice(scrubbed, options.maxBytes), isError);
}
