import { escapedUnitBytes, startOfUtf8Tail } from '../mcp/json-text-cost.js';

/** A stretch of a running command's output, all of one stream. */
export interface LiveOutputPiece {
  stream: 'stdout' | 'stderr';
  text: string;
}

/**
 * A preliminary result of `sandbox_exec`: the latest output of the running command, in the order
 * it was written (consecutive pieces of one stream merged), and how many bytes of earlier output
 * it leaves out. Each one replaces the one before; the tool's final result replaces the last.
 */
export interface LiveOutput {
  output: LiveOutputPiece[];
  omittedBytes: number;
}

/** The most one preliminary result takes as JSON (8 KiB), whatever the output holds. */
export const LIVE_OUTPUT_MAX_BYTES = 8 * 1024;

const encoder = new TextEncoder();
const utf8Bytes = (text: string) => encoder.encode(text).byteLength;
/** JSON of the envelope and of one piece with empty text; the digits of `omittedBytes` come on top. */
const ENVELOPE_BYTES = JSON.stringify({ output: [], omittedBytes: 0 } satisfies LiveOutput).length - 1;
const PIECE_BYTES = JSON.stringify({ stream: 'stdout', text: '' } satisfies LiveOutputPiece).length;
const MAX_DIGITS = String(Number.MAX_SAFE_INTEGER).length;

/**
 * The longest tail of `text` costing at most `maxBytes` as a JSON string (quotes not counted):
 * where it begins, never between the two halves of a surrogate pair, and what it costs.
 */
function escapedTail(text: string, maxBytes: number): { start: number; bytes: number } {
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    const cost = escapedUnitBytes(text, start - 1);
    if (bytes + cost > maxBytes) break;
    bytes += cost;
    start -= 1;
  }
  const code = text.charCodeAt(start);
  if (start > 0 && start < text.length && code >= 0xdc00 && code <= 0xdfff) {
    bytes -= escapedUnitBytes(text, start);
    start += 1;
  }
  return { start, bytes };
}

/**
 * The output of one running command, turned into bounded preliminary results: `add` each piece
 * of live output as it arrives, `snapshot` for the latest lines that fit `maxBytes` of JSON. A
 * cut falls at a line start when the kept text holds a line end (so a line is whole or absent),
 * else inside the one long line. It keeps no more text than a snapshot can show.
 *
 * @example
 * const live = createLiveOutput();
 * live.add('stdout', 'line-1\n');
 * live.add('stderr', 'warning\n');
 * live.snapshot(); // { output: [{ stream: 'stdout', text: 'line-1\n' }, { stream: 'stderr', text: 'warning\n' }], omittedBytes: 0 }
 */
export function createLiveOutput(maxBytes = LIVE_OUTPUT_MAX_BYTES) {
  const pieces: LiveOutputPiece[] = [];
  /** UTF-8 bytes of all output so far, and of the text still kept in `pieces`. */
  let totalBytes = 0;
  let keptBytes = 0;

  /** Lets go of text no snapshot can reach: a snapshot shows less than `maxBytes` of UTF-8. */
  const forget = () => {
    for (let first = pieces[0]; first && keptBytes > maxBytes; first = pieces[0]) {
      const firstBytes = utf8Bytes(first.text);
      if (keptBytes - firstBytes >= maxBytes) {
        pieces.shift();
        keptBytes -= firstBytes;
        continue;
      }
      first.text = first.text.slice(startOfUtf8Tail(first.text, maxBytes - (keptBytes - firstBytes)));
      keptBytes = keptBytes - firstBytes + utf8Bytes(first.text);
      return;
    }
  };

  return {
    add(stream: LiveOutputPiece['stream'], text: string): void {
      if (text === '') return;
      const bytes = utf8Bytes(text);
      totalBytes += bytes;
      keptBytes += bytes;
      const last = pieces.at(-1);
      if (last?.stream === stream) last.text += text;
      else pieces.push({ stream, text });
      forget();
    },

    snapshot(): LiveOutput {
      let room = maxBytes - ENVELOPE_BYTES - MAX_DIGITS;
      const shown: LiveOutputPiece[] = [];
      let shownBytes = 0;
      for (let index = pieces.length - 1; index >= 0; index -= 1) {
        const piece = pieces[index] as LiveOutputPiece;
        room -= PIECE_BYTES + (shown.length > 0 ? 1 : 0);
        if (room <= 0) break;
        const tail = escapedTail(piece.text, room);
        let start = tail.start;
        if (start > 0) {
          // Cut: from the first whole line on, when there is one.
          const lineEnd = piece.text.indexOf('\n', start - 1);
          if (lineEnd >= 0 && lineEnd < piece.text.length - 1) start = lineEnd + 1;
        }
        const text = piece.text.slice(start);
        if (text !== '') {
          shown.unshift({ stream: piece.stream, text });
          shownBytes += utf8Bytes(text);
        }
        if (start > 0) break;
        room -= tail.bytes;
      }
      return { output: shown, omittedBytes: totalBytes - shownBytes };
    },
  };
}
