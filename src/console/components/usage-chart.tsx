/** The daily usage bar chart: an SVG image with a text summary, and the same figures as a table. */
import { useId } from 'react';
import { formatCompact, formatCount, formatSeconds } from '../format.js';
import type { DayPoint } from '../usage.js';
import { type ChartMetric, chartModel, shortDay } from '../usage-chart.js';

const SERIES = {
  inputTokens: { label: 'Input tokens', className: 'chart-input' },
  outputTokens: { label: 'Output tokens', className: 'chart-output' },
  sandboxCpuSeconds: { label: 'Sandbox CPU time', className: 'chart-cpu' },
} as const;

function valueText(metric: ChartMetric, value: number): string {
  return metric === 'tokens' ? formatCount(value) : formatSeconds(value);
}

/** What the chart says, for screen readers: the totals and the busiest day. */
function summary(points: readonly DayPoint[], metric: ChartMetric): string {
  if (points.length === 0) return 'No days in the range.';
  const first = points[0]?.day ?? '';
  const last = points.at(-1)?.day ?? '';
  const span = `${shortDay(first)} to ${shortDay(last)}`;
  if (metric === 'cpu') {
    const total = points.reduce((sum, point) => sum + point.sandboxCpuSeconds, 0);
    const busiest = points.reduce((top, point) => (point.sandboxCpuSeconds > top.sandboxCpuSeconds ? point : top));
    return total === 0
      ? `No sandbox CPU time from ${span}.`
      : `${formatSeconds(total)} of sandbox CPU time from ${span}; the most on ${shortDay(busiest.day)}: ${formatSeconds(busiest.sandboxCpuSeconds)}.`;
  }
  const input = points.reduce((sum, point) => sum + point.inputTokens, 0);
  const output = points.reduce((sum, point) => sum + point.outputTokens, 0);
  const busiest = points.reduce((top, point) =>
    point.inputTokens + point.outputTokens > top.inputTokens + top.outputTokens ? point : top,
  );
  return input + output === 0
    ? `No tokens from ${span}.`
    : `${formatCount(input)} input and ${formatCount(output)} output tokens from ${span}; the most on ${shortDay(busiest.day)}: ${formatCount(busiest.inputTokens + busiest.outputTokens)}.`;
}

/** Daily bars of `points`: input and output tokens stacked, or sandbox CPU-seconds. */
export function UsageChart({ points, metric }: { points: readonly DayPoint[]; metric: ChartMetric }) {
  const id = useId();
  const model = chartModel(points, metric);
  const keys = metric === 'tokens' ? (['inputTokens', 'outputTokens'] as const) : (['sandboxCpuSeconds'] as const);
  const title = metric === 'tokens' ? 'Tokens per day' : 'Sandbox CPU time per day';
  return (
    <figure className="chart">
      <ul className="chart-legend" aria-hidden="true">
        {keys.map((key) => (
          <li key={key}>
            <span className={`chart-swatch ${SERIES[key].className}`} />
            {SERIES[key].label}
          </li>
        ))}
      </ul>
      <svg
        className="chart-svg"
        viewBox={`0 0 ${model.width} ${model.height}`}
        role="img"
        aria-labelledby={`${id}-title`}
        aria-describedby={`${id}-desc`}
      >
        <title id={`${id}-title`}>{title}</title>
        <desc id={`${id}-desc`}>{summary(points, metric)}</desc>
        {model.ticks.map((tick) => (
          <g key={tick.value}>
            <line className="chart-grid" x1={model.plot.left} x2={model.plot.right} y1={tick.y} y2={tick.y} />
            <text className="chart-tick" x={model.plot.left - 6} y={tick.y} textAnchor="end" dominantBaseline="middle">
              {metric === 'tokens' ? formatCompact(tick.value) : `${formatCompact(tick.value)} s`}
            </text>
          </g>
        ))}
        {model.bars.map((bar) => (
          <g key={bar.day} className="chart-bar">
            <title>
              {`${shortDay(bar.day)}: ${bar.segments
                .map((segment) => `${valueText(metric, segment.value)} ${SERIES[segment.key].label.toLowerCase()}`)
                .join(', ')}`}
            </title>
            {bar.segments.map((segment) =>
              segment.height > 0 ? (
                <rect
                  key={segment.key}
                  className={SERIES[segment.key].className}
                  x={bar.x}
                  y={segment.y}
                  width={bar.width}
                  height={segment.height}
                />
              ) : null,
            )}
          </g>
        ))}
        {model.labels.map((label) => (
          <text key={label.day} className="chart-tick" x={label.x} y={model.height - 8} textAnchor="middle">
            {shortDay(label.day)}
          </text>
        ))}
      </svg>
      <details className="chart-data">
        <summary>Show the figures as a table</summary>
        <div className="table-scroll">
          <table className="table table-dense">
            <caption className="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                {keys.map((key) => (
                  <th scope="col" key={key}>
                    {SERIES[key].label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {points.map((point) => (
                <tr key={point.day}>
                  <th scope="row" className="nowrap">
                    {point.day}
                  </th>
                  {keys.map((key) => (
                    <td key={key}>{valueText(metric, point[key])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
