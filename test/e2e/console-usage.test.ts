import { mkdir, readFile } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Json, readJson } from '../support/json.js';
import { lastUserText, type ScriptedModelServer, startScriptedModelServer } from '../support/scripted-model-server.js';
import { chatBody } from '../support/ui-stream.js';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import {
  axeContext,
  axeViolations,
  CONSOLE_SCREENSHOTS,
  ensureConsoleBuilt,
  reportFailedStep,
  watchConsolePage,
} from './support/console-page.js';
import { type MordnService, startMordnService } from './support/mordn-service.js';

/** The admin token `startMordnService` gives `mordn serve` (a copy: that module does not export it). */
const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const COOKIE = 'mordn_console';
/** What the scripted model reports for every turn, except a question saying NO-USAGE: none at all. */
const USAGE = { promptTokens: 1_200, completionTokens: 300 };
const DAILY_LIMIT = /^This assistant has reached its daily token limit\. It resets (tomorrow )?at .+\.$/;

const unavailable = browserUnavailableReason();
if (unavailable) console.warn(`Skipping the console usage browser test: ${unavailable}.`);

describe.skipIf(unavailable !== undefined)('usage and limits in the console, in Chromium', { timeout: 240_000 }, () => {
  let model: ScriptedModelServer;
  let mordn: MordnService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];
  let cookieValue = '';
  let tenantId = '';
  let agentId = '';

  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const region = (name: string) => page.getByRole('region', { name, exact: true });
  const admin = async (route: string, init: { method?: string; body?: unknown } = {}): Promise<Json> => {
    const response = await fetch(`${mordn.url}${route}`, {
      method: init.method ?? 'GET',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
    if (!response.ok) throw new Error(`${route} answered ${response.status}: ${await response.text()}`);
    return readJson(response);
  };
  const expectCleanPage = () => {
    expect(pageErrors).toEqual([]);
    expect(cspViolations).toEqual([]);
  };

  /** One chat turn through the API as `userId`, read to its end. */
  async function chat(userId: string, chatId: string, text = 'Hello'): Promise<number> {
    const response = await mordn.agentFetch(userId, '/v1/chat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(chatBody(chatId, text)),
    });
    await response.text();
    return response.status;
  }

  beforeAll(async () => {
    const built = await ensureConsoleBuilt();
    if (built) console.log('console: built dist/console');
    await mkdir(CONSOLE_SCREENSHOTS, { recursive: true });
    model = await startScriptedModelServer((request) => ({
      text: 'Noted.',
      usage: lastUserText(request).includes('NO-USAGE') ? null : USAGE,
    }));
    mordn = await startMordnService({
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'bwrap',
      MORDN_MODEL: 'openai-compatible:scripted-1',
      MORDN_MODEL_BASE_URL: model.baseUrl,
    });
    const tenants = await admin('/v1/admin/tenants');
    tenantId = tenants.items.find((tenant: Json) => tenant.name === 'Example tenant').id;
    const agents = await admin(`/v1/admin/tenants/${tenantId}/agents`);
    agentId = agents.items[0].id;
    browser = await launchChromium();
    context = await browser.newContext({ acceptDownloads: true });
    page = await context.newPage();
    watchConsolePage(page, { pageErrors, cspViolations });
  }, 180_000);

  afterEach(async ({ task }) => {
    if (task.result?.state !== 'fail' || !page) return;
    await reportFailedStep(page, task.name, 'usage-', `mordn:\n${mordn.process.stderr.join('').slice(-4_000)}`);
  });

  afterAll(async () => {
    await browser?.close();
    await mordn?.stop();
    await model?.close();
  });

  it('charts the day of three turns by two users and lists each user with the counters', async () => {
    expect(await chat('alice', 'alice-1')).toBe(200);
    expect(await chat('alice', 'alice-2')).toBe(200);
    expect(await chat('bob', 'bob-1')).toBe(200);
    // Metering records a turn as it ends: wait until all three are counted.
    await expect
      .poll(async () => (await admin(`/v1/admin/usage?tenantId=${tenantId}`)).items[0]?.turns ?? 0, {
        timeout: 10_000,
      })
      .toBe(3);

    await page.goto(`${mordn.url}/console/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Tenants').waitFor();
    cookieValue = (await context.cookies()).find((cookie) => cookie.name === COOKIE)?.value ?? '';
    expect(cookieValue).not.toBe('');

    await page.getByRole('link', { name: 'Example tenant', exact: true }).click();
    await region('Usage').getByRole('link', { name: 'Usage and limits' }).click();
    await heading('Usage and limits of Example tenant').waitFor();
    expect(new URL(page.url()).hash).toBe(`#/tenants/${tenantId}/usage`);

    // The chart: 30 days, today's bar the only one drawn, its summary naming the totals.
    const daily = region('Daily usage');
    const chart = daily.getByRole('img', { name: 'Tokens per day', exact: true });
    await chart.waitFor();
    expect(await daily.locator('.chart-bar').count()).toBe(30);
    expect(await daily.locator('.chart-bar rect').count()).toBe(2); // input and output of today
    const summary = await chart.locator('desc').textContent();
    expect(summary).toContain('3,600 input and 900 output tokens');
    await daily.getByText('Show the figures as a table').click();
    const today = new Date().toISOString().slice(0, 10);
    const todayRow = daily.getByRole('row').filter({ has: page.getByRole('rowheader', { name: today }) });
    expect(await todayRow.getByRole('cell').allTextContents()).toEqual(['3,600', '900']);
    // Sandbox CPU time instead: nothing ran in a sandbox.
    await daily.getByLabel('Sandbox CPU time', { exact: true }).check();
    const cpu = daily.getByRole('img', { name: 'Sandbox CPU time per day', exact: true });
    await cpu.waitFor();
    expect(await cpu.locator('desc').textContent()).toMatch(/^No sandbox CPU time from /);
    // Every turn reported its usage: no warning.
    expect(await page.getByRole('note').count()).toBe(0);

    const byUser = region('By agent and user');
    const alice = byUser.getByRole('row').filter({ hasText: 'alice' });
    await alice.waitFor();
    const cells = await alice.getByRole('cell').allTextContents();
    expect(cells.slice(0, 6)).toEqual([agentId, 'alice', '2', '0', '2,400', '600']);
    const bob = await byUser.getByRole('row').filter({ hasText: 'bob' }).getByRole('cell').allTextContents();
    expect(bob.slice(0, 6)).toEqual([agentId, 'bob', '1', '0', '1,200', '300']);
    await page.screenshot({ path: `${CONSOLE_SCREENSHOTS}/tenant-usage.png`, fullPage: true });
    expectCleanPage();
  });

  it('warns when the model reported no token usage for some turns', async () => {
    expect(await chat('carol', 'carol-1', 'NO-USAGE please')).toBe(200);
    await expect
      .poll(async () => (await admin(`/v1/admin/usage?tenantId=${tenantId}`)).items[0]?.turns ?? 0, {
        timeout: 10_000,
      })
      .toBe(4);
    await page.reload();
    const warning = region('Daily usage').getByRole('note');
    await warning.waitFor();
    expect(await warning.textContent()).toBe(
      'The model reported no token usage for 1 turn in this period.' +
        'Those turns count as 0 tokens, so token limits cannot hold for this model.',
    );
    const carol = region('By agent and user').getByRole('row').filter({ hasText: 'carol' });
    await carol.waitFor();
    expect((await carol.getByRole('cell').allTextContents()).slice(0, 6)).toEqual([
      agentId,
      'carol',
      '1',
      '1',
      '0',
      '0',
    ]);
    expectCleanPage();
  });

  it('downloads the CSV with the console session alone', async () => {
    const byUser = region('By agent and user');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      byUser.getByRole('link', { name: 'Download CSV' }).click(),
    ]);
    const csv = await readFile((await download.path()) ?? '', 'utf8');
    const [header, ...rows] = csv.trim().split(/\r?\n/);
    expect(header).toContain('inputTokens');
    expect(rows).toHaveLength(3);
    expect(rows.find((row) => row.includes('alice'))).toContain('2400');
    expectCleanPage();
  });

  it('edits the tenant limits: a wrong value is refused beside its field, a saved one is read back', async () => {
    const limits = region('Limits');
    const perDay = limits.getByLabel('Tokens per day');
    expect(await perDay.inputValue()).toBe('');
    await perDay.fill('lots');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.getByText('must be a whole number of at least 0, or empty for unlimited').waitFor();
    expect(await perDay.getAttribute('aria-invalid')).toBe('true');
    expect(await admin(`/v1/admin/tenants/${tenantId}/limits`)).toEqual({
      tokensPerDay: null,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: null,
      storageBytes: null,
    });

    await perDay.fill('0');
    await limits.getByLabel('Storage (bytes)').fill('1,073,741,824');
    await limits.getByText('1.0 GB.', { exact: false }).waitFor();
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.getByRole('status').getByText('Limits saved.').waitFor();
    expect(await perDay.getAttribute('aria-invalid')).toBeNull();
    expect(await admin(`/v1/admin/tenants/${tenantId}/limits`)).toEqual({
      tokensPerDay: 0,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: null,
      storageBytes: 1_073_741_824,
    });
    expect(await limits.getByLabel('Storage (bytes)').inputValue()).toBe('1073741824');
    await page.reload();
    expect(await region('Limits').getByLabel('Tokens per day').inputValue()).toBe('0');
    expectCleanPage();
  });

  it("edits an agent's limits on its page", async () => {
    await page.goto(`${mordn.url}/console/#/agents/${agentId}`);
    const limits = region('Limits');
    // Each field also says the tenant's limit, saved in the test before.
    const perDayHint = await limits.getByLabel('Tokens per day').getAttribute('aria-describedby');
    expect(await page.locator(`[id="${perDayHint}"]`).textContent()).toBe(
      'Input and output tokens per UTC day. Unlimited. Tenant limit: Refuses everything.',
    );
    await limits.getByLabel('Sandbox CPU-seconds per day').fill('3600');
    await limits.getByText('1 h.', { exact: false }).waitFor();
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await limits.getByRole('status').getByText('Limits saved.').waitFor();
    expect(await admin(`/v1/admin/agents/${agentId}/limits`)).toEqual({
      tokensPerDay: null,
      tokensPerMonth: null,
      sandboxCpuSecondsPerDay: 3600,
      storageBytes: null,
    });
    expectCleanPage();
  });

  it('the chat over the daily token limit names the limit and its reset, and asks the model nothing', async () => {
    const asked = model.requests.length;
    const chatRegion = page.getByRole('region', { name: 'Preview chat', exact: true });
    await chatRegion.getByLabel('Message').fill('Are you there?');
    const refused = page.waitForResponse(
      (response) => response.url().endsWith('/preview') && response.request().method() === 'POST',
    );
    await chatRegion.getByRole('button', { name: 'Send' }).click();
    const answer = await refused;
    expect(answer.status()).toBe(429);
    expect(await answer.json()).toMatchObject({
      status: 429,
      code: 'LIMIT_REACHED',
      limit: 'tokensPerDay',
      value: 0,
      resetAt: expect.any(String),
    });
    await chatRegion.getByText('Usage limit reached', { exact: true }).waitFor();
    const notice = chatRegion.locator('.mordn-limit p').nth(1);
    expect(await notice.textContent()).toMatch(DAILY_LIMIT);
    // The live region announces the same sentence; the message goes back to the box.
    expect(await chatRegion.getByRole('status').textContent()).toBe(await notice.textContent());
    expect(await chatRegion.getByLabel('Message').inputValue()).toBe('Are you there?');
    expect(model.requests.length).toBe(asked);
    await page
      .getByRole('region', { name: 'Preview', exact: true })
      .screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-preview-limit.png` });
    expectCleanPage();
  });

  it('passes axe-core with no violations on the usage page', async () => {
    const axe = await axeContext(browser);
    try {
      await axe.addCookies([{ name: COOKIE, value: cookieValue, url: mordn.url, httpOnly: true, sameSite: 'Strict' }]);
      const violations = await axeViolations(
        axe,
        `${mordn.url}/console/#/tenants/${encodeURIComponent(tenantId)}/usage`,
        (each) => each.getByRole('img', { name: 'Tokens per day', exact: true }),
      );
      expect(violations.map((violation) => `${violation.id}: ${violation.help}`)).toEqual([]);
    } finally {
      await axe.close();
    }
  });
});
