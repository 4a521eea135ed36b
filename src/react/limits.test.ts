import { describe, expect, it } from 'vitest';
import { limitReachedMessage, resetSentence, storageFullMessage } from './limits.js';
import { chatProblemOf, parseProblem, uploadProblemMessage } from './problems.js';

const NOW = new Date('2026-12-04T16:00:00Z');
const UTC = { now: NOW, locale: 'en-US', timeZone: 'UTC' };

/** The 429 body Mordn answers a chat turn over a limit. */
function limitProblem(limit: string, resetAt: string | null, status = 429) {
  return JSON.stringify({
    type: 'https://mordn.dev/problems/limit-reached',
    title: 'Limit reached',
    status,
    detail: `The ${limit} limit is reached.`,
    code: 'LIMIT_REACHED',
    limit,
    value: 0,
    used: 12,
    resetAt,
  });
}

describe('resetSentence', () => {
  it("says the reader's own time: today, tomorrow, or the date", () => {
    expect(resetSentence('2026-12-05T00:00:00Z', UTC)).toBe('It resets tomorrow at 12:00 AM.');
    // At 16:00 UTC it is 11 AM in New York, where UTC midnight is 7 PM today; in Tokyo it is already
    // 1 AM on Dec 5, and UTC midnight is 9 AM that same day.
    expect(resetSentence('2026-12-05T00:00:00Z', { ...UTC, timeZone: 'America/New_York' })).toBe(
      'It resets at 7:00 PM.',
    );
    expect(resetSentence('2026-12-05T00:00:00Z', { ...UTC, timeZone: 'Asia/Tokyo' })).toBe('It resets at 9:00 AM.');
    expect(
      resetSentence('2026-12-05T00:00:00Z', { ...UTC, now: new Date('2026-12-04T10:00:00Z'), timeZone: 'Asia/Tokyo' }),
    ).toBe('It resets tomorrow at 9:00 AM.');
    expect(resetSentence('2027-01-01T00:00:00Z', { ...UTC, timeZone: 'Europe/Berlin' })).toBe(
      'It resets on January 1 at 1:00 AM.',
    );
    expect(resetSentence('2027-01-01T00:00:00Z', { ...UTC, locale: 'de-DE', timeZone: 'Europe/Berlin' })).toBe(
      'It resets on 1. Januar at 01:00.',
    );
  });

  it('says nothing for a missing or unreadable time', () => {
    expect(resetSentence(null, UTC)).toBe('');
    expect(resetSentence(undefined, UTC)).toBe('');
    expect(resetSentence('soon', UTC)).toBe('');
  });
});

describe('limitReachedMessage', () => {
  it('names the limit reached and when it resets', () => {
    const berlin = { ...UTC, timeZone: 'Europe/Berlin' };
    expect(limitReachedMessage({ limit: 'tokensPerDay', resetAt: '2026-12-05T00:00:00Z' }, berlin)).toBe(
      'This assistant has reached its daily token limit. It resets tomorrow at 1:00 AM.',
    );
    expect(limitReachedMessage({ limit: 'tokensPerMonth', resetAt: '2027-01-01T00:00:00Z' }, berlin)).toBe(
      'This assistant has reached its monthly token limit. It resets on January 1 at 1:00 AM.',
    );
    expect(limitReachedMessage({ limit: 'sandboxCpuSecondsPerDay', resetAt: '2026-12-05T00:00:00Z' }, UTC)).toBe(
      'This assistant has used up its daily computing time. It resets tomorrow at 12:00 AM.',
    );
  });

  it('says storage is full with what to do, since storage does not reset', () => {
    expect(limitReachedMessage({ limit: 'storageBytes', resetAt: null }, UTC)).toBe(
      "This assistant's file storage is full. Delete files from earlier chats, or ask the administrator for more space.",
    );
  });

  it('still reads well for a limit it does not know', () => {
    expect(limitReachedMessage({ limit: 'gpuHours', resetAt: '2026-12-05T00:00:00Z' }, UTC)).toBe(
      'This assistant has reached a usage limit. It resets tomorrow at 12:00 AM.',
    );
    expect(limitReachedMessage({}, UTC)).toBe('This assistant has reached a usage limit.');
  });
});

describe('LIMIT_REACHED problems', () => {
  it('reads limit and resetAt from the problem body', () => {
    expect(parseProblem(limitProblem('tokensPerDay', '2026-12-05T00:00:00Z'))).toEqual({
      code: 'LIMIT_REACHED',
      detail: 'The tokensPerDay limit is reached.',
      limit: 'tokensPerDay',
      resetAt: '2026-12-05T00:00:00Z',
    });
    expect(parseProblem(limitProblem('storageBytes', null))?.resetAt).toBeNull();
  });

  it("turns a chat turn's 429 into the limit message, not the server's detail", () => {
    expect(chatProblemOf(new Error(limitProblem('tokensPerDay', '2026-12-05T00:00:00Z')), UTC)).toEqual({
      kind: 'limit-reached',
      message: 'This assistant has reached its daily token limit. It resets tomorrow at 12:00 AM.',
    });
  });

  it("turns an upload's 413 into the storage-full message", () => {
    const problem = parseProblem(limitProblem('storageBytes', null, 413));
    expect(uploadProblemMessage('report.pdf', 413, problem, [])).toBe(storageFullMessage('report.pdf'));
    expect(storageFullMessage('report.pdf')).toBe(
      "report.pdf could not be attached: this assistant's file storage is full. Delete files from earlier chats, or ask the administrator for more space.",
    );
    // A FILE_TOO_LARGE 413 keeps its own sentence.
    expect(uploadProblemMessage('big.csv', 413, { code: 'FILE_TOO_LARGE', detail: 'Too big.' }, [])).toBe(
      'big.csv: Too big.',
    );
  });
});
