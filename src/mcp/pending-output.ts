import { prefixWithinUtf8Bytes, startOfUtf8Tail } from './json-text-cost.js';

/** A notification carries at most this much output (UTF-8 bytes). */
export const PIECE_MAX_BYTES = 4096;

/**
 * The tail of a line not ended yet that waits for more output (or the end of the command): a
 * secret written in two parts is then redacted whole, as long as it is no longer than this.
 */
export const HOLD_BACK_BYTES = 256;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code < 0xdc00;
}

/**
 * The largest cut at or before `end` that no span crosses (a cut may touch a span, never split
 * it), never between the two halves of a surrogate pair.
 */
export function cutOutsideSpans(text: string, end: number, spans: ReadonlyArray<readonly [number, number]>): number {
  let cut = end;
  let moved = true;
  while (moved) {
    moved = false;
    for (const [start, stop] of spans) {
      if (start < cut && cut < stop) {
        cut = start;
        moved = true;
      }
    }
  }
  if (cut > 0 && isHighSurrogate(text.charCodeAt(cut - 1))) cut -= 1;
  return cut;
}

/**
 * One output stream's text not sent yet: decoded as it arrives with a streaming UTF-8 decoder (a
 * character split across two reads is put back together; an invalid byte becomes U+FFFD), with a
 * count of the bytes it came from. Keeps at most what it is told there is room for; past that it
 * drops the rest of the stream and says so.
 *
 * @example
 * const pending = new PendingOutput();
 * pending.append(Buffer.from('line-1\nline-'), 65_536);
 * pending.pieceEnd(false); // 7: 'line-1\n' may go, 'line-' waits for its line to end
 */
export class PendingOutput {
  readonly #decoder = new TextDecoder('utf-8');
  /** Decoded output not sent yet. */
  text = '';
  /** Bytes received and not yet carried by a notification. */
  #bytes = 0;
  #dropped = false;

  /** Whether output was dropped, once there was no more room for it: live output of it cannot go on. */
  get dropped(): boolean {
    return this.#dropped;
  }

  /** Bytes received and not yet carried by a notification. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Takes `chunk`, or as much of it as `room` bytes allow (then drops the rest of the stream). */
  append(chunk: Buffer, room: number): void {
    if (this.#dropped) return;
    const kept = chunk.length > room ? chunk.subarray(0, Math.max(0, room)) : chunk;
    if (kept !== chunk) this.#dropped = true;
    this.#bytes += kept.length;
    this.text += this.#decoder.decode(kept, { stream: true });
  }

  /** The stream ended: an unfinished character at its end becomes U+FFFD (unless output was dropped). */
  end(): void {
    if (!this.#dropped) this.text += this.#decoder.decode();
  }

  /**
   * Where the next piece may end (0: nothing to send yet). While the command runs, a piece is at
   * most `PIECE_MAX_BYTES` long and ends at a line end; inside a line (one longer than that, or
   * one not ended yet) it stops `HOLD_BACK_BYTES` before the point reached. At the end, all of it.
   */
  pieceEnd(ended: boolean): number {
    if (ended) return this.text.length;
    const window = prefixWithinUtf8Bytes(this.text, PIECE_MAX_BYTES);
    if (window.endsWith('\n')) return window.length;
    return Math.max(window.lastIndexOf('\n') + 1, startOfUtf8Tail(window, HOLD_BACK_BYTES));
  }

  /**
   * How many received bytes the first `end` UTF-16 units of the text carry: exact for valid UTF-8
   * (an invalid byte is counted as its U+FFFD until the text is all taken, which evens it out).
   */
  carried(end: number): number {
    return end >= this.text.length ? this.#bytes : Math.min(this.#bytes, Buffer.byteLength(this.text.slice(0, end)));
  }

  /** Removes the first `end` UTF-16 units of the text (sent). */
  take(end: number): void {
    this.#bytes -= this.carried(end);
    this.text = this.text.slice(end);
  }
}
