import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readJson } from '../support/json.js';
import {
  type ChatCompletionRequest,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../support/scripted-model-server.js';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import { type MordnService, startMordnService } from './support/mordn-service.js';
import { type NextApp, startNextApp } from './support/next-app.js';

const SALES = 'region,amount\nnorth,3\nsouth,5\nnorth,4\neast,10\n';
const SUMMARY = 'region,total\neast,10\nnorth,7\nsouth,5\n';
const CHART = 'x,y\n1,2\n';
const USER = 'ada';

/** The Python the scripted model runs in the sandbox: totals per region of the imported CSV. */
function summarize(csvPath: string): string {
  return [
    "python3 - <<'PY'",
    'import csv',
    'totals = {}',
    `with open(${JSON.stringify(csvPath)}, newline="") as source:`,
    '    for row in csv.DictReader(source):',
    '        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])',
    'with open("summary.csv", "w", newline="") as target:',
    '    writer = csv.writer(target, lineterminator="\\n")',
    '    writer.writerow(["region", "total"])',
    '    for region in sorted(totals):',
    '        writer.writerow([region, totals[region]])',
    'PY',
  ].join('\n');
}

/**
 * The model's side of the scenario, one step per tool result since the user's message: import the
 * attachment the prompt references, summarize it with python3, publish the summary, answer.
 */
function script(request: ChatCompletionRequest): ModelTurn {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  const sinceUser = request.messages.slice(lastUser);
  const sent = JSON.stringify(sinceUser);
  if (JSON.stringify(request.messages[lastUser]).includes('chart')) {
    // A hosted-interpreter habit: a link to the workspace path instead of a publish.
    const wrote = sinceUser.some((message) => message.role === 'tool');
    return wrote
      ? { text: ['Your chart is at [chart', '.csv](sandbox:/mnt/data/chart.csv).'] }
      : { toolCalls: [{ name: 'sandbox_write_file', arguments: { path: 'chart.csv', content: CHART } }] };
  }
  const storagePath = /storagePath=\\"(uploads\/[0-9a-f]{32})\\"/.exec(sent)?.[1];
  if (!storagePath) return { text: 'Attach a CSV file and I will summarize it.' };
  const imported = /uploads\/[^"\\]+\.csv/.exec(
    JSON.stringify(sinceUser.filter((message) => message.role === 'tool')),
  )?.[0];
  const turns: ModelTurn[] = [
    { toolCalls: [{ name: 'sandbox_import_file', arguments: { storagePath } }] },
    { toolCalls: [{ name: 'sandbox_exec', arguments: { command: summarize(imported ?? 'uploads/sales.csv') } }] },
    { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'summary.csv', filename: 'summary.csv' } }] },
    { text: ['Here is the summary ', 'by region.'] },
  ];
  return turns[sinceUser.filter((message) => message.role === 'tool').length] ?? { text: 'Done.' };
}

/** The card of a file, by its name. */
const fileCard = (page: Page, filename: string) => page.locator('.file-card', { hasText: filename });

const unavailable = browserUnavailableReason();
if (unavailable) console.warn(`Skipping the Next.js browser test: ${unavailable}.`);

describe.skipIf(unavailable !== undefined)('the Next.js example in Chromium', { timeout: 240_000 }, () => {
  let model: ScriptedModelServer;
  let mordn: MordnService;
  let app: NextApp;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    model = await startScriptedModelServer(script);
    mordn = await startMordnService({
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'bwrap',
      MORDN_MODEL: 'openai-compatible:scripted-1',
      MORDN_MODEL_BASE_URL: model.baseUrl,
    });
    app = await startNextApp(inject('exampleDir'), {
      MORDN_API_URL: mordn.url,
      MORDN_CHAT_KEY: mordn.key,
      SESSION_SECRET: randomBytes(32).toString('hex'),
    });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await mordn?.stop();
    await model?.close();
  });

  /** What the servers said, for a failure that the page alone does not explain. */
  const diagnostics = () =>
    [
      `page errors: ${pageErrors.join('\n') || 'none'}`,
      `next start:\n${app.output().slice(-4_000)}`,
      `mordn:\n${mordn.process.stdout.slice(-40).join('\n')}\n${mordn.process.stderr.join('').slice(-4_000)}`,
    ].join('\n\n');

  it('uploads a CSV, shows the published summary, re-signs it on reload and marks it unavailable once deleted', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      // Sign in: the page then opens a new chat of its own.
      await page.goto(app.url);
      await page.getByLabel('Name').fill(USER);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\?chat=[0-9a-f-]{36}$/);
      const chatId = new URL(page.url()).searchParams.get('chat') as string;

      // The picker's hints come from GET /api/chat?bootstrap: the managed set, CSV included.
      const picker = page.getByLabel('Attach files');
      await expect.poll(() => picker.getAttribute('accept')).toContain('text/csv');

      await picker.setInputFiles({ name: 'sales.csv', mimeType: 'text/csv', buffer: Buffer.from(SALES) });
      await fileCard(page, 'sales.csv').getByRole('link', { name: 'Download' }).waitFor();
      expect(await fileCard(page, 'sales.csv').textContent()).toContain(`text/csv · ${SALES.length} B`);

      await page.getByLabel('Message').fill('Summarize sales.csv by region, please.');
      await page.getByRole('button', { name: 'Send' }).click();

      const summaryLink = fileCard(page, 'summary.csv').getByRole('link', { name: 'Download' });
      await summaryLink.waitFor({ timeout: 90_000 }).catch((error: Error) => {
        throw new Error(`${error.message}\n\n${diagnostics()}`);
      });
      await page.getByText('Here is the summary by region.').waitFor();
      expect(await fileCard(page, 'summary.csv').textContent()).toContain(`text/csv · ${SUMMARY.length} B`);
      const firstUrl = (await summaryLink.getAttribute('href')) as string;
      const firstDownload = await fetch(firstUrl);
      expect(firstDownload.status).toBe(200);
      expect(firstDownload.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(Buffer.from(await firstDownload.arrayBuffer()).toString()).toBe(SUMMARY);

      // Reload: the history comes back with a freshly signed link (a later expiry, a new signature).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await page.reload();
      const reloadedLink = fileCard(page, 'summary.csv').getByRole('link', { name: 'Download' });
      await reloadedLink.waitFor();
      await fileCard(page, 'sales.csv').getByRole('link', { name: 'Download' }).waitFor();
      const secondUrl = (await reloadedLink.getAttribute('href')) as string;
      const first = new URL(firstUrl);
      const second = new URL(secondUrl);
      expect(second.pathname).toBe(first.pathname);
      expect(second.searchParams.get('signature')).not.toBe(first.searchParams.get('signature'));
      expect(Number(second.searchParams.get('expires'))).toBeGreaterThan(Number(first.searchParams.get('expires')));
      const secondDownload = await fetch(secondUrl);
      expect(secondDownload.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(Buffer.from(await secondDownload.arrayBuffer()).toString()).toBe(SUMMARY);

      // Delete the published file through the API; the history then marks it unavailable.
      const history = await readJson(await mordn.agentFetch(USER, `/v1/chats/${chatId}`));
      const published = history.messages
        .flatMap((message: { parts: Array<{ type: string; storagePath?: string }> }) => message.parts)
        .find((part: { type: string; storagePath?: string }) => part.storagePath?.startsWith('artifacts/'));
      const deleted = await mordn.agentFetch(USER, '/v1/uploads', {
        method: 'DELETE',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ storagePaths: [published.storagePath] }),
      });
      expect(deleted.status).toBe(204);
      expect((await fetch(secondUrl)).status).toBe(404);

      await page.reload();
      const gone = fileCard(page, 'summary.csv');
      await gone.getByText('Unavailable').waitFor();
      expect(await gone.getAttribute('aria-disabled')).toBe('true');
      expect(await gone.getByRole('link').count()).toBe(0);
      // The upload itself is untouched.
      await fileCard(page, 'sales.csv').getByRole('link', { name: 'Download' }).waitFor();
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows a card, not a dead link, for a workspace path the model linked instead of publishing', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await page.goto(app.url);
      await page.getByLabel('Name').fill('grace');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\?chat=[0-9a-f-]{36}$/);
      await page.getByLabel('Message').fill('Make me a chart, please.');
      await page.getByRole('button', { name: 'Send' }).click();

      const chartLink = fileCard(page, 'chart.csv').getByRole('link', { name: 'Download' });
      await chartLink.waitFor({ timeout: 90_000 }).catch((error: Error) => {
        throw new Error(`${error.message}\n\n${diagnostics()}`);
      });
      await page.getByText('Your chart is at chart.csv.').waitFor();
      expect(await page.locator('a[href^="sandbox:"]').count()).toBe(0);
      expect(await fileCard(page, 'chart.csv').textContent()).toContain(`text/csv · ${CHART.length} B`);
      const download = await fetch((await chartLink.getAttribute('href')) as string);
      expect(download.status).toBe(200);
      expect(await download.text()).toBe(CHART);
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
