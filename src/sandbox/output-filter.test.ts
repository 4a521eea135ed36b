import { describe, expect, it } from 'vitest';
import { createToolOutputFilter } from './output-filter.js';

const KEY = `mordn_${'a'.repeat(43)}`;

describe('createToolOutputFilter', () => {
  const filter = createToolOutputFilter(KEY, ['s3cr3t-value'], { redactPatterns: [/internal-token-[0-9]+/g] });

  it('redacts the key, key-shaped strings, configured secrets and operator patterns', () => {
    expect(filter(`k=${KEY} v=s3cr3t-value t=internal-token-42 ok`)).toBe('k=[redacted] v=[redacted] t=[redacted] ok');
  });

  it('tells where in the text as given it would redact', () => {
    const text = `x internal-token-42 ${KEY} s3cr3t-value`;
    const spans = filter.spans(text).sort((a, b) => a[0] - b[0]);
    expect(spans.map(([start, end]) => text.slice(start, end))).toEqual(['internal-token-42', KEY, 's3cr3t-value']);
  });

  it('finds every match of an operator pattern built without the global flag', () => {
    const single = createToolOutputFilter('', [], { redactPatterns: [/tok-\d/] });
    expect(single.spans('tok-1 tok-2')).toEqual([
      [0, 5],
      [6, 11],
    ]);
  });
});
