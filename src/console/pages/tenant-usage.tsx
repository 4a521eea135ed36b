import { type FormEvent, useId, useState } from 'react';
import { segment, withQuery } from '../api.js';
import { DetailPage } from '../components/detail-page.js';
import { LimitsEditor } from '../components/limits-editor.js';
import { PagedTable } from '../components/paged-table.js';
import { ResourceView } from '../components/resource-view.js';
import { Section } from '../components/ui.js';
import { UsageChart } from '../components/usage-chart.js';
import { formatBytes, formatCount, formatGibHours, formatGibSeconds, formatSeconds } from '../format.js';
import { useDocumentTitle, usePaged, useResource } from '../hooks.js';
import { href } from '../router.js';
import { useApi } from '../session.js';
import type { Page, TenantRecord, UsageRow } from '../types.js';
import {
  type DayRange,
  dailySeries,
  defaultRange,
  rangeProblem,
  turnsWithoutUsage,
  usageCsvFilename,
  usageCsvHref,
  usageQuery,
} from '../usage.js';
import type { ChartMetric } from '../usage-chart.js';

const USAGE_PATH = '/v1/admin/usage';
/** Rows asked for per request; a year of days takes a few pages. */
const DAY_PAGE = 100;
/** The most pages of days read for one chart (a 366-day range needs 4). */
const MAX_DAY_PAGES = 10;

/** A tenant's metered usage: a daily chart, a table by agent and user, CSV downloads, and its limits. */
export function TenantUsagePage({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const base = `/v1/admin/tenants/${segment(tenantId)}`;
  const tenant = useResource<TenantRecord>(base, () => api.get<TenantRecord>(base));
  const name = tenant.data?.name ?? '';
  useDocumentTitle(name === '' ? 'Usage' : `Usage of ${name}`);
  const [range, setRange] = useState<DayRange>(() => defaultRange(new Date()));

  return (
    <DetailPage
      crumbs={[{ href: href({ page: 'tenant', tenantId }), label: name === '' ? tenantId : name }]}
      current="Usage and limits"
      title={name === '' ? 'Usage and limits' : `Usage and limits of ${name}`}
      record={tenant}
    >
      {() => (
        <>
          <RangeForm range={range} onApply={setRange} />
          <DailySection tenantId={tenantId} range={range} />
          <ByUserSection tenantId={tenantId} range={range} />
          <Section
            title="Limits"
            description="Empty is unlimited; 0 refuses everything. A turn over a limit is refused until the limit resets (the next UTC midnight, or the first of the month); each agent's own limits, on its page, can only narrow these."
          >
            <LimitsEditor path={`${base}/limits`} label="Tenant limits" />
          </Section>
        </>
      )}
    </DetailPage>
  );
}

/** The from/to picker (UTC days, inclusive); the range applies on "Show". */
function RangeForm({ range, onApply }: { range: DayRange; onApply: (range: DayRange) => void }) {
  const id = useId();
  const [draft, setDraft] = useState(range);
  const [problem, setProblem] = useState('');

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const found = rangeProblem(draft);
    setProblem(found ?? '');
    if (found === undefined) onApply(draft);
  }

  return (
    <form className="inline-form range-form" aria-label="Period" onSubmit={submit} noValidate>
      <div className="field">
        <label htmlFor={`${id}-from`}>From (UTC)</label>
        <input
          id={`${id}-from`}
          type="date"
          value={draft.from}
          max={draft.to}
          onChange={(event) => setDraft((current) => ({ ...current, from: event.target.value }))}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-to`}>To (UTC)</label>
        <input
          id={`${id}-to`}
          type="date"
          value={draft.to}
          min={draft.from}
          onChange={(event) => setDraft((current) => ({ ...current, to: event.target.value }))}
        />
      </div>
      <button type="submit" className="button">
        Show
      </button>
      {problem === '' ? null : (
        <div role="alert" className="alert alert-error">
          {problem}
        </div>
      )}
    </form>
  );
}

/** Every `groupBy=day` row of the range, following the cursor. */
async function loadDays(get: (path: string) => Promise<Page<UsageRow>>, tenantId: string, range: DayRange) {
  const rows: UsageRow[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_DAY_PAGES; page += 1) {
    const answer: Page<UsageRow> = await get(
      withQuery(USAGE_PATH, { ...usageQuery(tenantId, range, 'day'), limit: DAY_PAGE, cursor }),
    );
    rows.push(...answer.items);
    cursor = answer.nextCursor;
    if (cursor === null) break;
  }
  return rows;
}

function CsvLink({ tenantId, range, groupBy }: { tenantId: string; range: DayRange; groupBy: 'day' | 'user' }) {
  return (
    <a
      className="button"
      href={usageCsvHref(tenantId, range, groupBy)}
      download={usageCsvFilename(tenantId, range, groupBy)}
    >
      Download CSV
    </a>
  );
}

function NoUsageWarning({ turns }: { turns: number }) {
  if (turns === 0) return null;
  return (
    <div className="callout callout-warning" role="note">
      <p className="callout-note">
        The model reported no token usage for {formatCount(turns)} {turns === 1 ? 'turn' : 'turns'} in this period.
      </p>
      <p>Those turns count as 0 tokens, so token limits cannot hold for this model.</p>
    </div>
  );
}

function DailySection({ tenantId, range }: { tenantId: string; range: DayRange }) {
  const api = useApi();
  const [metric, setMetric] = useState<ChartMetric>('tokens');
  const id = useId();
  const days = useResource<UsageRow[]>(`days:${tenantId}:${range.from}:${range.to}`, () =>
    loadDays((path) => api.get<Page<UsageRow>>(path), tenantId, range),
  );
  return (
    <Section
      title="Daily usage"
      description={`${range.from} to ${range.to}, by UTC day.`}
      actions={<CsvLink tenantId={tenantId} range={range} groupBy="day" />}
    >
      <ResourceView resource={days}>
        {(rows) => (
          <>
            <NoUsageWarning turns={turnsWithoutUsage(rows)} />
            <fieldset className="checkbox-group chart-metric">
              <legend>Show</legend>
              {(
                [
                  ['tokens', 'Tokens (input and output)'],
                  ['cpu', 'Sandbox CPU time'],
                ] as const
              ).map(([value, text]) => (
                <label key={value} className="checkbox" htmlFor={`${id}-${value}`}>
                  <input
                    id={`${id}-${value}`}
                    type="radio"
                    name={`${id}-metric`}
                    value={value}
                    checked={metric === value}
                    onChange={() => setMetric(value)}
                  />
                  {text}
                </label>
              ))}
            </fieldset>
            <UsageChart points={dailySeries(rows, range)} metric={metric} />
          </>
        )}
      </ResourceView>
    </Section>
  );
}

function ByUserSection({ tenantId, range }: { tenantId: string; range: DayRange }) {
  const api = useApi();
  const rows = usePaged<UsageRow>(`users:${tenantId}:${range.from}:${range.to}`, (cursor) =>
    api.get<Page<UsageRow>>(USAGE_PATH, { ...usageQuery(tenantId, range, 'user'), limit: 50, cursor }),
  );
  return (
    <Section
      title="By agent and user"
      description="Totals of the period for each user of each agent."
      actions={<CsvLink tenantId={tenantId} range={range} groupBy="user" />}
    >
      <PagedTable
        list={rows}
        label="Usage by agent and user"
        empty="No usage in this period."
        dense
        head={
          <>
            <th scope="col">Agent</th>
            <th scope="col">User</th>
            <th scope="col">Turns</th>
            <th scope="col">Turns without usage</th>
            <th scope="col">Input tokens</th>
            <th scope="col">Output tokens</th>
            <th scope="col">Reasoning tokens</th>
            <th scope="col">Cached input tokens</th>
            <th scope="col">Tool calls</th>
            <th scope="col">Sandbox CPU</th>
            <th scope="col">Sandbox memory</th>
            <th scope="col">Disk</th>
            <th scope="col">Published</th>
            <th scope="col">Downloaded</th>
            <th scope="col">Egress</th>
          </>
        }
        row={(row) => <UserRow key={`${row.agentId ?? ''}\u0000${row.userId ?? ''}`} row={row} />}
      />
    </Section>
  );
}

function UserRow({ row }: { row: UsageRow }) {
  return (
    <tr>
      <td className="nowrap">
        {row.agentId === undefined ? (
          <span className="muted">—</span>
        ) : (
          <a href={href({ page: 'agent', agentId: row.agentId })}>
            <code className="mono">{row.agentId}</code>
          </a>
        )}
      </td>
      <td className="nowrap">
        <code className="mono">{row.userId ?? '—'}</code>
      </td>
      <td>{formatCount(row.turns)}</td>
      <td>{row.turnsWithoutUsage > 0 ? <strong>{formatCount(row.turnsWithoutUsage)}</strong> : '0'}</td>
      <td>{formatCount(row.inputTokens)}</td>
      <td>{formatCount(row.outputTokens)}</td>
      <td>{formatCount(row.reasoningTokens)}</td>
      <td>{formatCount(row.cachedInputTokens)}</td>
      <td>{formatCount(row.toolCalls)}</td>
      <td className="nowrap">{formatSeconds(row.sandboxCpuSeconds)}</td>
      <td className="nowrap">{formatGibSeconds(row.sandboxMemoryGibSeconds)}</td>
      <td className="nowrap">{formatGibHours(row.diskGibHours)}</td>
      <td className="nowrap">{formatBytes(row.artifactBytesPublished)}</td>
      <td className="nowrap">{formatBytes(row.artifactBytesDownloaded)}</td>
      <td className="nowrap">{formatBytes(row.egressBytes)}</td>
    </tr>
  );
}
