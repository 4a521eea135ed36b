import { describe, expect, it } from 'vitest';
import { problemError, withQuery } from './api.js';
import { formatBytes, formatCompact, formatGibHours, formatGibSeconds, formatSeconds, newChatId } from './format.js';

describe('formatBytes', () => {
  it('uses bytes below a kilobyte and one decimal below ten units', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1)).toBe('1 byte');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(50 * 1024 * 1024)).toBe('50 MB');
    expect(formatBytes(-1)).toBe('—');
  });
});

describe('formatSeconds', () => {
  it('says seconds, minutes and hours', () => {
    expect(formatSeconds(4.24)).toBe('4.2 s');
    expect(formatSeconds(3725)).toBe('1 h 2 min 5 s');
    expect(formatSeconds(120)).toBe('2 min');
  });
});

describe('resource-time figures', () => {
  it('reads GiB-seconds and GiB-hours with fewer decimals as they grow', () => {
    expect(formatGibSeconds(0, 'en-US')).toBe('0 GiB·s');
    expect(formatGibSeconds(1.2345, 'en-US')).toBe('1.23 GiB·s');
    expect(formatGibSeconds(12.345, 'en-US')).toBe('12.3 GiB·s');
    expect(formatGibSeconds(12_345.6, 'en-US')).toBe('12,346 GiB·s');
    expect(formatGibHours(0.004, 'en-US')).toBe('0 GiB·h');
    expect(formatGibHours(0.5, 'en-US')).toBe('0.5 GiB·h');
    expect(formatGibHours(-1)).toBe('—');
    expect(formatGibSeconds(Number.NaN)).toBe('—');
  });

  it('shortens axis figures', () => {
    expect(formatCompact(0, 'en-US')).toBe('0');
    expect(formatCompact(1_500, 'en-US')).toBe('1.5K');
    expect(formatCompact(2_000_000, 'en-US')).toBe('2M');
    expect(formatCompact(250, 'en-US')).toBe('250');
    // Quarter ticks of a small scale keep their second decimal.
    expect(formatCompact(0.25, 'en-US')).toBe('0.25');
    expect(formatCompact(2_500, 'en-US')).toBe('2.5K');
  });
});

describe('newChatId', () => {
  it('is a UUID', () => {
    expect(newChatId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('api helpers', () => {
  it('appends only defined query values', () => {
    expect(withQuery('/x', { limit: 50, cursor: null, force: true })).toBe('/x?limit=50&force=true');
    expect(withQuery('/x', { cursor: undefined })).toBe('/x');
  });

  it('reads a problem body, falling back for others', () => {
    const error = problemError(409, {
      type: 'urn:mordn:problem:active-keys',
      title: 'Conflict',
      status: 409,
      code: 'ACTIVE_KEYS',
      detail: 'The tenant has active keys.',
      requestId: 'r1',
    });
    expect([error.status, error.code, error.detail, error.requestId]).toEqual([
      409,
      'ACTIVE_KEYS',
      'The tenant has active keys.',
      'r1',
    ]);
    expect(problemError(502, undefined, 'Bad Gateway').detail).toBe('The request failed (HTTP 502 Bad Gateway).');
  });
});
