import { describe, expect, it } from 'vitest';
import { problemError, withQuery } from './api.js';
import { formatBytes, formatSeconds, newChatId } from './format.js';

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
