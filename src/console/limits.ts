/**
 * The limits editor's pure rules: the four limits, their text fields (empty means unlimited) and
 * how a filled form becomes the `PUT …/limits` body. The server validates again and its field
 * errors are shown beside the same fields.
 */
import type { FieldProblem } from './api.js';
import { formatBytes, formatCount, formatSeconds } from './format.js';
import type { Limits } from './types.js';

export type LimitName = keyof Limits;

/** One limit as the form shows it. */
export interface LimitField {
  name: LimitName;
  label: string;
  hint: string;
  /** How a value reads in words (`formatBytes` for storage). */
  unit: 'tokens' | 'seconds' | 'bytes';
}

export const LIMIT_FIELDS: readonly LimitField[] = [
  { name: 'tokensPerDay', label: 'Tokens per day', hint: 'Input and output tokens per UTC day.', unit: 'tokens' },
  {
    name: 'tokensPerMonth',
    label: 'Tokens per month',
    hint: 'Input and output tokens per calendar month (UTC).',
    unit: 'tokens',
  },
  {
    name: 'sandboxCpuSecondsPerDay',
    label: 'Sandbox CPU-seconds per day',
    hint: 'CPU time of sandbox commands per UTC day.',
    unit: 'seconds',
  },
  { name: 'storageBytes', label: 'Storage (bytes)', hint: 'Uploads and published files kept.', unit: 'bytes' },
];

/** The form's text for each limit: the number, or empty for unlimited. */
export type LimitsDraft = Record<LimitName, string>;

export function limitsDraft(limits: Limits): LimitsDraft {
  const text = (value: number | null) => (value === null ? '' : String(value));
  return {
    tokensPerDay: text(limits.tokensPerDay),
    tokensPerMonth: text(limits.tokensPerMonth),
    sandboxCpuSecondsPerDay: text(limits.sandboxCpuSecondsPerDay),
    storageBytes: text(limits.storageBytes),
  };
}

/** A parsed form: the body to send, or the fields to correct first. */
export type ParsedLimits = { ok: true; limits: Limits } | { ok: false; errors: FieldProblem[] };

/**
 * The `PUT` body of a draft: empty (or blank) is null, a whole number of at least 0 is itself
 * (thousands separators `,`, `_` and spaces are allowed), anything else is a field error.
 *
 * @example
 * parseLimitsDraft({ tokensPerDay: '100,000', tokensPerMonth: '', sandboxCpuSecondsPerDay: '0', storageBytes: '' });
 * // { ok: true, limits: { tokensPerDay: 100000, tokensPerMonth: null, sandboxCpuSecondsPerDay: 0, storageBytes: null } }
 */
export function parseLimitsDraft(draft: LimitsDraft): ParsedLimits {
  const limits: Limits = {
    tokensPerDay: null,
    tokensPerMonth: null,
    sandboxCpuSecondsPerDay: null,
    storageBytes: null,
  };
  const errors: FieldProblem[] = [];
  for (const { name } of LIMIT_FIELDS) {
    const text = draft[name].replace(/[\s,_]/g, '');
    if (text === '') continue;
    const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(value)) {
      errors.push({
        path: name,
        message: /^\d+$/.test(text)
          ? `must be at most ${Number.MAX_SAFE_INTEGER}`
          : 'must be a whole number of at least 0, or empty for unlimited',
      });
      continue;
    }
    limits[name] = value;
  }
  return errors.length === 0 ? { ok: true, limits } : { ok: false, errors };
}

/**
 * The messages of `errors` that concern the limit `name` (the server may name it `tokensPerDay`
 * or `body.tokensPerDay`), and the rest, which the form shows above its fields.
 */
export function splitFieldErrors(errors: readonly FieldProblem[]): {
  byField: Partial<Record<LimitName, string[]>>;
  other: FieldProblem[];
} {
  const byField: Partial<Record<LimitName, string[]>> = {};
  const other: FieldProblem[] = [];
  for (const error of errors) {
    const last = error.path.split(/[./]/).at(-1) ?? '';
    const field = LIMIT_FIELDS.find((each) => each.name === last);
    if (field) byField[field.name] = [...(byField[field.name] ?? []), error.message];
    else other.push(error);
  }
  return { byField, other };
}

/**
 * A limit in words: "Unlimited", "Refuses everything", or the amount ("100,000 tokens", "1 h",
 * "1.0 GB").
 *
 * @example
 * describeLimit(LIMIT_FIELDS[3], 1_073_741_824); // '1.0 GB'
 */
export function describeLimit(field: LimitField, value: number | null, locale?: string): string {
  if (value === null) return 'Unlimited';
  if (value === 0) return 'Refuses everything';
  if (field.unit === 'bytes') return formatBytes(value);
  if (field.unit === 'seconds') return formatSeconds(value);
  return `${formatCount(value, locale)} tokens`;
}

/** What a field's text stands for, in words; empty while it is not a valid limit. */
export function describeDraft(field: LimitField, text: string, locale?: string): string {
  const trimmed = text.replace(/[\s,_]/g, '');
  if (trimmed === '') return describeLimit(field, null);
  const value = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  return Number.isSafeInteger(value) ? describeLimit(field, value, locale) : '';
}
