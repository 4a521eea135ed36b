import { describe, expect, it } from 'vitest';
import { createSecretScrubber } from './secrets.js';

describe('createSecretScrubber', () => {
  const key = `mordn_${'k'.repeat(20)}-${'Z'.repeat(22)}`;

  it('redacts anything shaped like an agent key', () => {
    const scrub = createSecretScrubber([]);
    expect(scrub(`Authorization: Bearer ${key}; again ${key}`)).toBe(
      'Authorization: Bearer [redacted]; again [redacted]',
    );
  });

  it('redacts a sandbox MCP token whole', () => {
    const token = `mordn_mcp_${'t'.repeat(21)}_${'Q'.repeat(21)}`;
    const scrub = createSecretScrubber([]);
    expect(scrub(`Bearer ${token}.`)).toBe('Bearer [redacted].');
    // An API key that happens to begin with "mcp_" is still one key.
    expect(scrub(`key mordn_mcp_${'a'.repeat(39)} end`)).toBe('key [redacted] end');
  });

  it('redacts literal secrets, treating them as text rather than patterns', () => {
    const scrub = createSecretScrubber(['p4ss.w*rd(1)', 'admin-token-0123456789']);
    expect(scrub('pw=p4ss.w*rd(1) token=admin-token-0123456789 other=p4ssXw*rd(1)')).toBe(
      'pw=[redacted] token=[redacted] other=p4ssXw*rd(1)',
    );
  });

  it('prefers the longest secret when one contains another', () => {
    const scrub = createSecretScrubber(['abcdef', 'abcdefghijkl']);
    expect(scrub('x abcdefghijkl y')).toBe('x [redacted] y');
  });

  it('leaves text without secrets untouched', () => {
    expect(createSecretScrubber(['secret-value'])('nothing to see')).toBe('nothing to see');
  });
});
