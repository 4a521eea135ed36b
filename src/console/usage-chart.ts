/**
 * The daily usage chart's geometry: bars (stacked input and output tokens, or sandbox
 * CPU-seconds), a rounded scale and its gridlines, and which days get a label. Pure numbers; the
 * SVG is drawn by the usage page.
 */
import type { DayPoint } from './usage.js';

/** What the chart shows. */
export type ChartMetric = 'tokens' | 'cpu';

/** One stacked piece of a bar. */
export interface BarSegment {
  key: 'inputTokens' | 'outputTokens' | 'sandboxCpuSeconds';
  value: number;
  y: number;
  height: number;
}

export interface Bar {
  day: string;
  x: number;
  width: number;
  total: number;
  segments: BarSegment[];
}

export interface Tick {
  value: number;
  y: number;
}

export interface ChartModel {
  width: number;
  height: number;
  /** The plot area inside the axes. */
  plot: { left: number; top: number; right: number; bottom: number };
  max: number;
  ticks: Tick[];
  bars: Bar[];
  /** The days labelled under the axis (at most `maxLabels`, evenly spaced, the last one included). */
  labels: Array<{ day: string; x: number }>;
}

export interface ChartSize {
  width: number;
  height: number;
  left: number;
  top: number;
  right: number;
  bottom: number;
  maxLabels: number;
}

export const CHART_SIZE: ChartSize = {
  width: 720,
  height: 240,
  left: 64,
  top: 12,
  right: 24,
  bottom: 28,
  maxLabels: 8,
};

const SEGMENTS: Record<ChartMetric, BarSegment['key'][]> = {
  tokens: ['inputTokens', 'outputTokens'],
  cpu: ['sandboxCpuSeconds'],
};

/**
 * The smallest "round" number (1, 2, 2.5 or 5 times a power of ten) at or above `value`; 1 for
 * nothing to show, so an empty chart still has a scale.
 *
 * @example
 * niceCeiling(730); // 1000
 * niceCeiling(1_800); // 2000
 */
export function niceCeiling(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * power >= value * (1 - 1e-12)) return step * power;
  }
  return 10 * power;
}

/** The bars, scale and labels of `points` for `metric`. */
export function chartModel(points: readonly DayPoint[], metric: ChartMetric, size: ChartSize = CHART_SIZE): ChartModel {
  const plot = { left: size.left, top: size.top, right: size.width - size.right, bottom: size.height - size.bottom };
  const plotHeight = plot.bottom - plot.top;
  const keys = SEGMENTS[metric];
  const totals = points.map((point) => keys.reduce((sum, key) => sum + point[key], 0));
  const max = niceCeiling(Math.max(0, ...totals));
  const scale = (value: number) => (value / max) * plotHeight;
  const slot = points.length === 0 ? 0 : (plot.right - plot.left) / points.length;
  const gap = Math.min(slot * 0.2, 4);
  const bars = points.map((point, index) => {
    let base = plot.bottom;
    const segments = keys.map((key) => {
      const height = scale(point[key]);
      base -= height;
      return { key, value: point[key], y: base, height };
    });
    return {
      day: point.day,
      x: plot.left + index * slot + gap / 2,
      width: Math.max(slot - gap, 1),
      total: totals[index] ?? 0,
      segments,
    };
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => ({ value: max * share, y: plot.bottom - share * plotHeight }));
  const every = Math.max(1, Math.ceil(points.length / size.maxLabels));
  const labels = bars
    .filter((_, index) => (points.length - 1 - index) % every === 0)
    .map((bar) => ({ day: bar.day, x: bar.x + bar.width / 2 }));
  return { width: size.width, height: size.height, plot, max, ticks, bars, labels };
}

/** A `YYYY-MM-DD` day as a short date ("Dec 4"), read as the UTC day it is. */
export function shortDay(day: string, locale?: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric', timeZone: 'UTC' }).format(date);
}
