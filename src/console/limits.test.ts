import { describe, expect, it } from 'vitest';
import {
  describeDraft,
  describeLimit,
  LIMIT_FIELDS,
  limitsDraft,
  parseLimitsDraft,
  splitFieldErrors,
} from './limits.js';

const EMPTY = { tokensPerDay: '', tokensPerMonth: '', sandboxCpuSecondsPerDay: '', storageBytes: '' };

describe('the limits form', () => {
  it('shows null as an empty field and 0 as 0', () => {
    expect(
      limitsDraft({ tokensPerDay: 0, tokensPerMonth: null, sandboxCpuSecondsPerDay: 3600, storageBytes: null }),
    ).toEqual({ tokensPerDay: '0', tokensPerMonth: '', sandboxCpuSecondsPerDay: '3600', storageBytes: '' });
  });

  it('sends all four keys: empty is null, separators are allowed, 0 stays 0', () => {
    expect(
      parseLimitsDraft({ ...EMPTY, tokensPerDay: ' 100,000 ', storageBytes: '0', tokensPerMonth: '1_000 000' }),
    ).toEqual({
      ok: true,
      limits: { tokensPerDay: 100_000, tokensPerMonth: 1_000_000, sandboxCpuSecondsPerDay: null, storageBytes: 0 },
    });
    expect(parseLimitsDraft(EMPTY)).toEqual({
      ok: true,
      limits: { tokensPerDay: null, tokensPerMonth: null, sandboxCpuSecondsPerDay: null, storageBytes: null },
    });
  });

  it('names every field that is not a whole number of at least 0', () => {
    const parsed = parseLimitsDraft({
      tokensPerDay: '-1',
      tokensPerMonth: '1.5',
      sandboxCpuSecondsPerDay: 'ten',
      storageBytes: '99999999999999999999',
    });
    expect(parsed).toEqual({
      ok: false,
      errors: [
        { path: 'tokensPerDay', message: 'must be a whole number of at least 0, or empty for unlimited' },
        { path: 'tokensPerMonth', message: 'must be a whole number of at least 0, or empty for unlimited' },
        { path: 'sandboxCpuSecondsPerDay', message: 'must be a whole number of at least 0, or empty for unlimited' },
        { path: 'storageBytes', message: 'must be at most 9007199254740991' },
      ],
    });
  });

  it("puts the server's field errors beside their fields, the rest above", () => {
    expect(
      splitFieldErrors([
        { path: 'tokensPerDay', message: 'exceeds the tenant limit (1000)' },
        { path: 'body.storageBytes', message: 'too big' },
        { path: 'tokensPerDay', message: 'second' },
        { path: 'extra', message: 'is not a recognized key' },
        { path: '', message: 'general' },
      ]),
    ).toEqual({
      byField: { tokensPerDay: ['exceeds the tenant limit (1000)', 'second'], storageBytes: ['too big'] },
      other: [
        { path: 'extra', message: 'is not a recognized key' },
        { path: '', message: 'general' },
      ],
    });
  });
});

describe('limits in words', () => {
  const [perDay, , cpu, storage] = LIMIT_FIELDS;
  it('says unlimited, refuses everything, or the amount in its unit', () => {
    if (!perDay || !cpu || !storage) throw new Error('four fields');
    expect(describeLimit(perDay, null)).toBe('Unlimited');
    expect(describeLimit(perDay, 0)).toBe('Refuses everything');
    expect(describeLimit(perDay, 100_000, 'en-US')).toBe('100,000 tokens');
    expect(describeLimit(cpu, 3_600)).toBe('1 h');
    expect(describeLimit(storage, 1_073_741_824)).toBe('1.0 GB');
  });

  it('reads what is typed, and says nothing for what is not a limit', () => {
    if (!perDay || !storage) throw new Error('four fields');
    expect(describeDraft(perDay, ' ')).toBe('Unlimited');
    expect(describeDraft(storage, '1,073,741,824')).toBe('1.0 GB');
    expect(describeDraft(perDay, '-5')).toBe('');
    expect(describeDraft(perDay, '99999999999999999999')).toBe('');
  });
});
