import { describe, expect, it } from 'vitest';
import { createBandwidthLimiter } from './bandwidth.js';

describe('createBandwidthLimiter', () => {
  it('lets a burst of a tenth of a second through at once, then paces at the rate', () => {
    let now = 0;
    const limiter = createBandwidthLimiter(1024 * 1024, () => now);
    expect(limiter.reserve(100 * 1024)).toBe(0);
    // The burst is spent: the next 1 MiB may go a second later (the debt is counted).
    expect(limiter.reserve(1024 * 1024)).toBe(
      Math.ceil(((1024 * 1024 - (104857.6 - 100 * 1024)) * 1000) / (1024 * 1024)),
    );
    now += 5_000;
    expect(limiter.reserve(64 * 1024)).toBe(0);
  });

  it('averages the rate over many reservations', () => {
    let now = 0;
    const rate = 10 * 1024 * 1024;
    const limiter = createBandwidthLimiter(rate, () => now);
    let sent = 0;
    while (now < 10_000) {
      now += limiter.reserve(64 * 1024);
      sent += 64 * 1024;
    }
    expect(sent / (now / 1000)).toBeGreaterThan(rate * 0.95);
    expect(sent / (now / 1000)).toBeLessThan(rate * 1.05);
  });
});
