/** Readable figures for the console's tables. Pure; the locale is the browser's unless given. */

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'] as const;

/** 1536 → "1.5 KB" (powers of 1024, one decimal below 10 units). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${value} ${bytes === 1 ? 'byte' : 'bytes'}`;
  const digits = value < 10 ? 1 : 0;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** An ISO 8601 instant as a medium date and short time; the input itself when it does not parse. */
export function formatDateTime(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' }).format(date);
}

/** An ISO 8601 instant as a medium date and a time with seconds (for logs of events seconds apart). */
export function formatDateTimeSeconds(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'medium' }).format(date);
}

/** An ISO 8601 instant as a medium date. */
export function formatDate(iso: string, locale?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(locale, { dateStyle: 'medium' }).format(date);
}

/** 3725.4 → "1 h 2 min 5 s"; below a minute, one decimal: "4.2 s". */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 60) return `${Math.round(seconds * 10) / 10} s`;
  const total = Math.round(seconds);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const rest = total % 60;
  return [hours > 0 ? `${hours} h` : '', minutes > 0 ? `${minutes} min` : '', rest > 0 ? `${rest} s` : '']
    .filter((part) => part !== '')
    .join(' ');
}

/** 12345 → "12,345" in the browser's locale. */
export function formatCount(count: number, locale?: string): string {
  return new Intl.NumberFormat(locale).format(count);
}

/** A fresh chat id: `crypto.randomUUID()` where the context allows it, else a v4 UUID from random bytes. */
export function newChatId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A measure with at most `digits` decimals, fewer for large values, in the browser's locale. */
function formatAmount(value: number, digits: number, locale?: string): string {
  const decimals = value >= 100 ? 0 : value >= 10 ? Math.min(1, digits) : digits;
  return new Intl.NumberFormat(locale, { maximumFractionDigits: decimals }).format(value);
}

/** Memory over time: 12.345 → "12.3 GiB·s" (GiB held for one second each). */
export function formatGibSeconds(value: number, locale?: string): string {
  if (!Number.isFinite(value) || value < 0) return '—';
  return `${formatAmount(value, 2, locale)} GiB·s`;
}

/** Disk over time: 0.5 → "0.5 GiB·h" (GiB kept for one hour each). */
export function formatGibHours(value: number, locale?: string): string {
  if (!Number.isFinite(value) || value < 0) return '—';
  return `${formatAmount(value, 2, locale)} GiB·h`;
}

/** A chart axis figure: 1500 → "1.5K", 2000000 → "2M". */
export function formatCompact(value: number, locale?: string): string {
  return new Intl.NumberFormat(locale, { notation: 'compact', maximumFractionDigits: 2 }).format(value);
}
