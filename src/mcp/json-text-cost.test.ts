import { describe, expect, it } from 'vitest';
import {
  escapedUnitBytes,
  prefixWithinEscapedBytes,
  prefixWithinUtf8Bytes,
  startOfUtf8Tail,
  utf8UnitBytes,
} from './json-text-cost.js';

/** Quotes, backslashes, every kind of escape, two-, three- and four-byte characters, lone surrogates. */
const SAMPLES = ['plain', '"q"\\', '\b\t\n\f\r', '\u0000\u0001\u001f', 'é€😀', '\ud800x\udc00', '😀\ud83d'];

function costOf(text: string, unit: (text: string, index: number) => number): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) bytes += unit(text, index);
  return bytes;
}

describe('single-escape and UTF-8 costs', () => {
  it.each(SAMPLES)('match JSON.stringify and Buffer.byteLength for %j', (text) => {
    expect(costOf(text, escapedUnitBytes)).toBe(Buffer.byteLength(JSON.stringify(text)) - 2);
    expect(costOf(text, utf8UnitBytes)).toBe(Buffer.byteLength(text));
  });

  it('cut prefixes within a byte count, never inside a surrogate pair', () => {
    expect(prefixWithinEscapedBytes('ab"cd', 3)).toBe('ab');
    expect(prefixWithinEscapedBytes('ab"cd', 4)).toBe('ab"');
    expect(prefixWithinUtf8Bytes('a😀b', 3)).toBe('a');
    expect(prefixWithinUtf8Bytes('a😀b', 5)).toBe('a😀');
  });

  it('find where the shortest tail of at least so many bytes begins', () => {
    expect(startOfUtf8Tail('abcdef', 2)).toBe(4);
    expect(startOfUtf8Tail('abc', 10)).toBe(0);
    expect(startOfUtf8Tail('a😀', 1)).toBe(1);
  });
});
