/**
 * Wording for Mordn's `LIMIT_REACHED` problems (a chat turn's 429, an upload's 413): which limit
 * the assistant reached and, in the reader's own time, when it resets. Pure, so it is unit-tested.
 */

/** The limits Mordn names in a `LIMIT_REACHED` problem's `limit`. */
export type LimitName = 'tokensPerDay' | 'tokensPerMonth' | 'sandboxCpuSecondsPerDay' | 'storageBytes';

/** How to write times: the reader's locale and time zone unless given; `now` decides "today" and "tomorrow". */
export interface LimitWording {
  now?: Date;
  locale?: string;
  timeZone?: string;
}

const REACHED: Record<LimitName, string> = {
  tokensPerDay: 'This assistant has reached its daily token limit.',
  tokensPerMonth: 'This assistant has reached its monthly token limit.',
  sandboxCpuSecondsPerDay: 'This assistant has used up its daily computing time.',
  storageBytes: "This assistant's file storage is full.",
};

/** Storage frees only when files go: no reset time, what to do instead. */
const STORAGE_ADVICE = 'Delete files from earlier chats, or ask the administrator for more space.';

function isLimitName(value: string | undefined): value is LimitName {
  return value !== undefined && value in REACHED;
}

/**
 * "It resets at 1:00 AM." (today), "It resets tomorrow at 1:00 AM." or "It resets on January 1
 * at 1:00 AM.", in the reader's time; empty for a missing or unreadable time.
 */
export function resetSentence(resetAt: string | null | undefined, wording: LimitWording = {}): string {
  const at = resetAt ? new Date(resetAt) : undefined;
  if (!at || Number.isNaN(at.getTime())) return '';
  const { locale, timeZone } = wording;
  const now = wording.now ?? new Date();
  const zone = timeZone === undefined ? {} : { timeZone };
  const dayOf = new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'numeric', day: 'numeric', ...zone });
  const time = new Intl.DateTimeFormat(locale, { timeStyle: 'short', ...zone }).format(at);
  const day = dayOf.format(at);
  if (day === dayOf.format(now)) return `It resets at ${time}.`;
  if (day === dayOf.format(new Date(now.getTime() + 86_400_000))) return `It resets tomorrow at ${time}.`;
  const date = new Intl.DateTimeFormat(locale, { month: 'long', day: 'numeric', ...zone }).format(at);
  return `It resets on ${date} at ${time}.`;
}

/**
 * What to tell the person chatting when the assistant reached a limit: which one, and when it
 * resets (storage does not reset: what to do instead).
 *
 * @example
 * limitReachedMessage({ limit: 'tokensPerDay', resetAt: '2026-12-05T00:00:00Z' }, { timeZone: 'UTC', locale: 'en-US', now: new Date('2026-12-04T16:00:00Z') });
 * // 'This assistant has reached its daily token limit. It resets tomorrow at 12:00 AM.'
 */
export function limitReachedMessage(
  problem: { limit?: string; resetAt?: string | null },
  wording: LimitWording = {},
): string {
  if (problem.limit === 'storageBytes') return `${REACHED.storageBytes} ${STORAGE_ADVICE}`;
  const reached = isLimitName(problem.limit) ? REACHED[problem.limit] : 'This assistant has reached a usage limit.';
  const reset = resetSentence(problem.resetAt, wording);
  return reset === '' ? reached : `${reached} ${reset}`;
}

/** The sentence for an upload refused because storage is full (`413 LIMIT_REACHED`). */
export function storageFullMessage(filename: string): string {
  return `${filename} could not be attached: this assistant's file storage is full. ${STORAGE_ADVICE}`;
}
