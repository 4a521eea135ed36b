import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/support/seeded-random.js';
import { boundedToolResult, TRUNCATION_MARKER } from './bounded-tool-result.js';
import { doublyEscapedJsonBytes, doublyEscapedStringBytes, prefixWithinDoublyEscapedBytes } from './json-text-cost.js';

const keep = (text: string) => text;
/** Characters whose escaping differs: controls, quotes, backslashes, multi-byte, pairs, lone halves. */
const ALPHABET = ['a', '\u0000', '\u0001', '\n', '\t', '"', '\\', '\u007f', 'é', '€', '😀', '\ud800', '\udc00', ' '];

function randomText(random: ReturnType<typeof seededRandom>, length: number): string {
  return Array.from({ length }, () => random.pick(ALPHABET)).join('');
}

/** No lone surrogate: UTF-8 round-trips it unchanged. */
function isWellFormed(text: string): boolean {
  return Buffer.from(text, 'utf8').toString('utf8') === text;
}

function wireBytes(result: unknown): number {
  return Buffer.byteLength(JSON.stringify(result));
}

function parsedText(result: { content: unknown }): Record<string, unknown> {
  const [part] = result.content as Array<{ text: string }>;
  return JSON.parse(part?.text as string);
}

describe('the doubly escaped cost model', () => {
  it('matches serializing twice, for every kind of character', () => {
    const random = seededRandom(7);
    for (let round = 0; round < 300; round += 1) {
      const text = randomText(random, random.integer(0, 40));
      expect(doublyEscapedStringBytes(text), JSON.stringify(text)).toBe(doublyEscapedJsonBytes(text));
      const limit = random.integer(0, 120);
      const prefix = prefixWithinDoublyEscapedBytes(text, limit);
      expect(text.startsWith(prefix)).toBe(true);
      expect(doublyEscapedJsonBytes(prefix) - 4).toBeLessThanOrEqual(limit);
      // A cut never separates the halves of a pair.
      const pairAcrossCut = /^[\ud800-\udbff][\udc00-\udfff]$/.test(text.slice(prefix.length - 1, prefix.length + 1));
      expect(prefix.length > 0 && pairAcrossCut).toBe(false);
    }
  });
});

describe('boundedToolResult', () => {
  it('carries a small value twice, as text and structured content', () => {
    const result = boundedToolResult({ path: 'a.txt', size: 1 }, { maxBytes: 4096, filter: keep });
    expect(result).toEqual({
      content: [{ type: 'text', text: '{"path":"a.txt","size":1}' }],
      structuredContent: { path: 'a.txt', size: 1 },
    });
  });

  it('drops the structured copy before cutting anything', () => {
    const value = { content: 'x'.repeat(3000) };
    const result = boundedToolResult(value, { maxBytes: 4096, filter: keep });
    expect(result.structuredContent).toBeUndefined();
    expect(parsedText(result)).toEqual(value);
    expect(wireBytes(result)).toBeLessThanOrEqual(4096);
  });

  it.each([
    ['NUL bytes', '\u0000'],
    ['other control bytes', '\u0001'],
    ['quotes', '"'],
    ['emoji', '😀'],
    ['plain text', 'y'],
  ])('cuts %s to the bound, marked, keeping small fields whole', (_label, unit) => {
    for (const maxBytes of [1024, 5120, 65_536, 1024 * 1024]) {
      const value = { exitCode: 0, stdout: unit.repeat(1_100_000), stderr: 'warning\n', truncated: false };
      const result = boundedToolResult(value, { maxBytes, filter: keep, isError: false });
      expect(wireBytes(result), `${maxBytes}`).toBeLessThanOrEqual(maxBytes);
      expect(wireBytes(result), `${maxBytes}`).toBeGreaterThan(maxBytes * 0.8);
      const parsed = parsedText(result);
      expect(parsed).toMatchObject({ exitCode: 0, stderr: 'warning\n', truncated: true });
      expect(String(parsed.stdout).endsWith(TRUNCATION_MARKER)).toBe(true);
      expect(isWellFormed(String(parsed.stdout))).toBe(true);
    }
  });

  it('shares the room between large strings and keeps only whole array items', () => {
    const entries = Array.from({ length: 3000 }, (_, index) => ({
      name: `${'\u0001'.repeat(240)}${index}`,
      type: 'file',
      size: 0,
    }));
    const listed = parsedText(
      boundedToolResult({ path: '.', entries, truncated: false }, { maxBytes: 65_536, filter: keep }),
    );
    expect(listed.truncated).toBe(true);
    expect((listed.entries as unknown[]).length).toBeGreaterThan(10);
    expect(listed.entries).toEqual(entries.slice(0, (listed.entries as unknown[]).length));

    const both = parsedText(
      boundedToolResult(
        { stdout: 'o'.repeat(100_000), stderr: 'e'.repeat(100_000) },
        { maxBytes: 20_000, filter: keep },
      ),
    );
    expect(Math.abs(String(both.stdout).length - String(both.stderr).length)).toBeLessThan(2);
  });

  it('redacts before measuring, and keeps error results errors', () => {
    const result = boundedToolResult(
      { error: { code: 'NOT_TEXT', message: `secret-1 ${'\u0002'.repeat(10_000)}` } },
      { maxBytes: 2048, filter: (text) => text.replaceAll('secret-1', '[redacted]'), isError: true },
    );
    expect(result.isError).toBe(true);
    expect(wireBytes(result)).toBeLessThanOrEqual(2048);
    const parsed = parsedText(result) as { error: { code: string; message: string } };
    expect(parsed.error.code).toBe('NOT_TEXT');
    expect(parsed.error.message.startsWith('[redacted] ')).toBe(true);
  });

  it('stays within the bound for random content of every shape', () => {
    const random = seededRandom(11);
    for (let round = 0; round < 40; round += 1) {
      const maxBytes = random.pick([1024, 3000, 5120, 20_000]);
      const value = {
        path: randomText(random, random.integer(0, 300)),
        content: randomText(random, random.integer(0, 20_000)),
        entries: Array.from({ length: random.integer(0, 200) }, () => ({ name: randomText(random, 20) })),
      };
      const result = boundedToolResult(value, { maxBytes, filter: keep });
      expect(wireBytes(result), `seed 11 round ${round}`).toBeLessThanOrEqual(maxBytes);
      expect(() => parsedText(result)).not.toThrow();
    }
  });
});
