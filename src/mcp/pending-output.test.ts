import { describe, expect, it } from 'vitest';
import { cutOutsideSpans, HOLD_BACK_BYTES, PendingOutput, PIECE_MAX_BYTES } from './pending-output.js';

function pendingWith(...chunks: Array<string | Buffer>): PendingOutput {
  const pending = new PendingOutput();
  for (const chunk of chunks) pending.append(Buffer.from(chunk), 1 << 20);
  return pending;
}

describe('PendingOutput', () => {
  it('ends a piece at the last line end and keeps an unfinished short line back', () => {
    const pending = pendingWith('line-1\nline-2\nline-');
    expect(pending.pieceEnd(false)).toBe('line-1\nline-2\n'.length);
    pending.take(pending.pieceEnd(false));
    expect(pending.text).toBe('line-');
    expect(pending.pieceEnd(false)).toBe(0);
    expect(pending.pieceEnd(true)).toBe(5);
  });

  it('cuts inside a line only 256 bytes before the point reached, and at most 4 KiB at a time', () => {
    const unfinished = pendingWith('y'.repeat(1000));
    expect(unfinished.pieceEnd(false)).toBe(1000 - HOLD_BACK_BYTES);
    const long = pendingWith('x'.repeat(10_000));
    expect(long.pieceEnd(false)).toBe(PIECE_MAX_BYTES - HOLD_BACK_BYTES);
    const lines = pendingWith(`${'z'.repeat(99)}\n`.repeat(100));
    // 40 whole lines fit in 4 KiB; the 41st would be cut 96 bytes in, less than the hold-back.
    expect(lines.pieceEnd(false)).toBe(4000);
  });

  it('measures the hold-back in UTF-8 bytes and never splits a surrogate pair', () => {
    const pending = pendingWith('😀'.repeat(100));
    const end = pending.pieceEnd(false);
    expect(Buffer.byteLength(pending.text.slice(end))).toBe(HOLD_BACK_BYTES);
    expect(pending.text.slice(0, end)).toBe('😀'.repeat(36));
  });

  it('puts a character split across two reads back together and marks invalid bytes', () => {
    const pending = pendingWith(Buffer.from([0xe2, 0x82]), Buffer.from([0xac, 0x0a, 0xff, 0x0a]));
    expect(pending.text).toBe('€\n\uFFFD\n');
    const cutShort = pendingWith(Buffer.from([0x61, 0xe2, 0x82]));
    cutShort.end();
    expect(cutShort.text).toBe('a\uFFFD');
  });

  it('counts the bytes a piece carries, an unfinished character with the piece that empties the text', () => {
    const pending = pendingWith('é\n', Buffer.from([0xe2]));
    expect(pending.bytes).toBe(4);
    expect(pending.carried(1)).toBe(2);
    expect(pending.carried(2)).toBe(4);
    pending.take(2);
    expect(pending.bytes).toBe(0);
    pending.append(Buffer.from([0x82, 0xac]), 100);
    expect(pending.text).toBe('€');
    expect(pending.carried(1)).toBe(2);
  });

  it('keeps only what there is room for and then drops the rest of the stream', () => {
    const pending = new PendingOutput();
    pending.append(Buffer.from('a'.repeat(100)), 60);
    pending.append(Buffer.from('b\n'), 1000);
    expect(pending.text).toBe('a'.repeat(60));
    expect(pending.dropped).toBe(true);
  });
});

describe('cutOutsideSpans', () => {
  it('moves a cut back to the start of any span it would split, repeatedly', () => {
    expect(cutOutsideSpans('x'.repeat(50), 20, [[15, 25]])).toBe(15);
    expect(
      cutOutsideSpans('x'.repeat(50), 20, [
        [15, 25],
        [10, 16],
      ]),
    ).toBe(10);
    // Touching a span is not splitting it.
    expect(cutOutsideSpans('x'.repeat(50), 20, [[20, 30]])).toBe(20);
    expect(cutOutsideSpans('ab😀', 3, [])).toBe(2);
  });
});
