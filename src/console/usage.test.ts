import { describe, expect, it } from 'vitest';
import type { UsageRow } from './types.js';
import {
  dailySeries,
  dayStart,
  defaultRange,
  rangeDays,
  rangeProblem,
  turnsWithoutUsage,
  usageCsvFilename,
  usageCsvHref,
} from './usage.js';
import { chartModel, niceCeiling, shortDay } from './usage-chart.js';

function row(fields: Partial<UsageRow>): UsageRow {
  return {
    tenantId: 'ten_1',
    inputTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    cachedInputTokens: 0,
    turns: 0,
    turnsWithoutUsage: 0,
    toolCalls: 0,
    sandboxCpuSeconds: 0,
    sandboxMemoryGibSeconds: 0,
    diskGibHours: 0,
    artifactBytesPublished: 0,
    artifactBytesDownloaded: 0,
    egressBytes: 0,
    ...fields,
  };
}

describe('the date range', () => {
  it('opens on the last 30 UTC days, today included, whatever the hour', () => {
    expect(defaultRange(new Date('2026-12-04T16:00:00Z'))).toEqual({ from: '2026-11-05', to: '2026-12-04' });
    expect(defaultRange(new Date('2026-03-01T00:00:00Z'))).toEqual({ from: '2026-01-31', to: '2026-03-01' });
    expect(rangeDays(defaultRange(new Date('2026-12-04T23:59:59Z')))).toBe(30);
  });

  it('reads only real days', () => {
    expect(dayStart('2026-02-28')).toBe(Date.UTC(2026, 1, 28));
    expect(dayStart('2026-02-30')).toBeNaN();
    expect(dayStart('2026-2-3')).toBeNaN();
    expect(dayStart('')).toBeNaN();
  });

  it('refuses empty, reversed and over-long ranges, naming the limit', () => {
    expect(rangeProblem({ from: '2026-01-01', to: '2026-01-01' })).toBeUndefined();
    expect(rangeProblem({ from: '2025-01-01', to: '2026-01-01' })).toBeUndefined(); // 366 days
    expect(rangeProblem({ from: '2024-12-31', to: '2026-01-01' })).toBe(
      'Choose at most 366 days (this range has 367).',
    );
    expect(rangeProblem({ from: '2026-01-02', to: '2026-01-01' })).toBe(
      'The start date must not be after the end date.',
    );
    expect(rangeProblem({ from: '', to: '2026-01-01' })).toBe('Choose a valid start date.');
    expect(rangeProblem({ from: '2026-01-01', to: '2026-13-01' })).toBe('Choose a valid end date.');
  });
});

describe('dailySeries', () => {
  it('has every day of the range in order, zeros where no row came, rows outside left out', () => {
    const series = dailySeries(
      [
        row({ day: '2026-12-03', inputTokens: 10, outputTokens: 5, sandboxCpuSeconds: 1.5 }),
        row({ day: '2026-12-01', inputTokens: 7 }),
        row({ day: '2026-12-03', inputTokens: 1 }),
        row({ day: '2026-11-30', inputTokens: 999 }),
        row({ inputTokens: 999 }),
      ],
      { from: '2026-12-01', to: '2026-12-04' },
    );
    expect(series).toEqual([
      { day: '2026-12-01', inputTokens: 7, outputTokens: 0, sandboxCpuSeconds: 0 },
      { day: '2026-12-02', inputTokens: 0, outputTokens: 0, sandboxCpuSeconds: 0 },
      { day: '2026-12-03', inputTokens: 11, outputTokens: 5, sandboxCpuSeconds: 1.5 },
      { day: '2026-12-04', inputTokens: 0, outputTokens: 0, sandboxCpuSeconds: 0 },
    ]);
  });

  it('crosses a month and a leap day', () => {
    const days = dailySeries([], { from: '2028-02-28', to: '2028-03-01' }).map((point) => point.day);
    expect(days).toEqual(['2028-02-28', '2028-02-29', '2028-03-01']);
  });

  it('counts turns without usage across rows', () => {
    expect(turnsWithoutUsage([row({ turnsWithoutUsage: 2 }), row({}), row({ turnsWithoutUsage: 3 })])).toBe(5);
    expect(turnsWithoutUsage([])).toBe(0);
  });
});

describe('the CSV link', () => {
  it('asks the same query with format=csv, encoded', () => {
    expect(usageCsvHref('ten 1&x', { from: '2026-11-05', to: '2026-12-04' }, 'user')).toBe(
      '/v1/admin/usage?tenantId=ten+1%26x&from=2026-11-05&to=2026-12-04&groupBy=user&format=csv',
    );
    expect(usageCsvFilename('ten/1', { from: '2026-11-05', to: '2026-12-04' }, 'day')).toBe(
      'usage-ten_1-2026-11-05-2026-12-04-by-day.csv',
    );
  });
});

describe('the chart', () => {
  it('rounds the scale up to 1, 2, 2.5 or 5 times a power of ten', () => {
    expect(niceCeiling(0)).toBe(1);
    expect(niceCeiling(Number.NaN)).toBe(1);
    expect(niceCeiling(1)).toBe(1);
    expect(niceCeiling(7)).toBe(10);
    expect(niceCeiling(11)).toBe(20);
    expect(niceCeiling(2_100)).toBe(2_500);
    expect(niceCeiling(730)).toBe(1_000);
    expect(niceCeiling(0.3)).toBe(0.5);
  });

  it('stacks output on input, scaled to the plot, with labelled ticks', () => {
    const points = [
      { day: '2026-12-01', inputTokens: 600, outputTokens: 200, sandboxCpuSeconds: 3 },
      { day: '2026-12-02', inputTokens: 0, outputTokens: 0, sandboxCpuSeconds: 0 },
    ];
    const size = { width: 120, height: 120, left: 20, top: 10, right: 0, bottom: 10, maxLabels: 8 };
    const model = chartModel(points, 'tokens', size);
    expect(model.max).toBe(1_000);
    expect(model.ticks.map((tick) => [tick.value, tick.y])).toEqual([
      [0, 110],
      [250, 85],
      [500, 60],
      [750, 35],
      [1000, 10],
    ]);
    const [busy, idle] = model.bars;
    expect(busy?.segments).toEqual([
      { key: 'inputTokens', value: 600, y: 50, height: 60 },
      { key: 'outputTokens', value: 200, y: 30, height: 20 },
    ]);
    expect(busy?.total).toBe(800);
    expect(busy?.x).toBe(22); // slot 50 wide, a 4-unit gap split on both sides
    expect(busy?.width).toBe(46);
    expect(idle?.segments.every((segment) => segment.height === 0)).toBe(true);
    expect(idle?.x).toBe(72);
  });

  it('draws CPU-seconds alone on their own scale', () => {
    const points = [{ day: '2026-12-01', inputTokens: 5_000, outputTokens: 5_000, sandboxCpuSeconds: 42 }];
    const model = chartModel(points, 'cpu');
    expect(model.max).toBe(50);
    expect(model.bars[0]?.segments.map((segment) => segment.key)).toEqual(['sandboxCpuSeconds']);
  });

  it('labels at most maxLabels days, always the last one', () => {
    const points = dailySeries([], { from: '2026-11-05', to: '2026-12-04' });
    const labels = chartModel(points, 'tokens').labels.map((label) => label.day);
    expect(labels.length).toBeLessThanOrEqual(8);
    expect(labels.at(-1)).toBe('2026-12-04');
    expect(chartModel(points.slice(0, 3), 'tokens').labels).toHaveLength(3);
    expect(chartModel([], 'tokens').bars).toEqual([]);
  });

  it('names a UTC day the same in every time zone', () => {
    expect(shortDay('2026-12-04', 'en-US')).toBe('Dec 4');
    expect(shortDay('not a day', 'en-US')).toBe('not a day');
  });
});
