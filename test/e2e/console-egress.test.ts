import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '../support/json.js';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import {
  axeContext,
  axeViolations,
  CONSOLE_SCREENSHOTS,
  ensureConsoleBuilt,
  reportFailedStep,
  statusValue,
  watchConsolePage,
} from './support/console-page.js';
import { type MordnService, startMordnService } from './support/mordn-service.js';

/** The admin token `startMordnService` gives `mordn serve` (a copy: that module does not export it). */
const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const COOKIE = 'mordn_console';
const TENANT = 'Egress tenant';
const AGENT = 'Egress agent';
const PACKAGE_INDEX = 'https://pypi.mirror.example/simple/';
const BAD_ENTRY = 'https://api.example.org/path';

const unavailable = browserUnavailableReason();
if (unavailable) console.warn(`Skipping the console egress browser test: ${unavailable}.`);

describe.skipIf(unavailable !== undefined)('sandbox egress in the console, in Chromium', { timeout: 240_000 }, () => {
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
  const admin = (route: string) =>
    fetch(`${mordn.url}${route}`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }).then(readJson);
  const expectCleanPage = () => {
    expect(pageErrors).toEqual([]);
    expect(cspViolations).toEqual([]);
  };

  /** Egress decisions as the proxy records them, written straight into the service's database. */
  function recordEgress(rows: Array<Record<string, string | number | null>>): void {
    const database = new Sqlite(path.join(mordn.dataDir, 'mordn.db'));
    try {
      database.pragma('busy_timeout = 5000');
      const insert = database.prepare(
        `INSERT INTO egress_log (id, at, tenant_id, agent_id, user_id, workspace_id, host, port, address, decision,
           reason, bytes_up, bytes_down, duration_ms, count)
         VALUES (@id, @at, @tenant_id, @agent_id, @user_id, @workspace_id, @host, @port, @address, @decision,
           @reason, @bytes_up, @bytes_down, @duration_ms, @count)`,
      );
      for (const row of rows) insert.run(row);
    } finally {
      database.close();
    }
  }

  beforeAll(async () => {
    const built = await ensureConsoleBuilt();
    if (built) console.log('console: built dist/console');
    await mkdir(CONSOLE_SCREENSHOTS, { recursive: true });
    mordn = await startMordnService({
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'bwrap',
      MORDN_SANDBOX_EGRESS: 'on',
      MORDN_SANDBOX_PACKAGE_INDEX_URL: PACKAGE_INDEX,
      MORDN_SANDBOX_EGRESS_PORTS: '443,8443',
    });
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
    watchConsolePage(page, { pageErrors, cspViolations });
  }, 180_000);

  afterEach(async ({ task }) => {
    if (task.result?.state !== 'fail' || !page) return;
    await reportFailedStep(page, task.name, 'egress-', `mordn:\n${mordn.process.stderr.join('').slice(-4_000)}`);
  });

  afterAll(async () => {
    await browser?.close();
    await mordn?.stop();
  });

  it('signs in and creates a tenant whose Egress section starts empty, and an agent', async () => {
    await page.goto(`${mordn.url}/console/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Tenants').waitFor();
    cookieValue = (await context.cookies()).find((cookie) => cookie.name === COOKIE)?.value ?? '';
    expect(cookieValue).not.toBe('');

    await page.getByLabel('Tenant name').fill(TENANT);
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.getByRole('link', { name: TENANT, exact: true }).click();
    await heading(TENANT).waitFor();
    tenantId = decodeURIComponent(new URL(page.url()).hash.replace('#/tenants/', ''));
    await region('Egress').getByText('No egress recorded.', { exact: false }).waitFor();

    await page.getByLabel('Agent name').fill(AGENT);
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('link', { name: AGENT, exact: true }).click();
    await heading(AGENT).waitFor();
    agentId = decodeURIComponent(new URL(page.url()).hash.replace('#/agents/', ''));
    expect(agentId).toMatch(/^agt_/);
    expectCleanPage();
  });

  it("shows the operator's ceiling beside the Network control", async () => {
    const config = region('Configuration');
    const network = config.getByLabel('Network', { exact: true });
    expect(await network.inputValue()).toBe('none');
    const ceiling = config.locator('.network-ceiling');
    await ceiling.getByText('Operator: on').waitFor();
    await ceiling.getByText('The operator allows sandbox network access for this tenant', { exact: false }).waitFor();
    await ceiling.getByText(PACKAGE_INDEX, { exact: true }).waitFor();
    expect(await ceiling.locator('dd').nth(1).textContent()).toBe('443, 8443');
    expectCleanPage();
  });

  it('refuses an allowlist with a bad entry, naming it beside the control, then saves and publishes the fixed one', async () => {
    const config = region('Configuration');
    await config.getByLabel('Network', { exact: true }).selectOption('allowlist');
    const allow = config.getByLabel('Allowed hosts');
    await allow.fill(`api.example.com\n${BAD_ENTRY}`);
    const refused = page.waitForResponse(
      (response) =>
        response.url().endsWith(`/v1/admin/agents/${agentId}/config`) && response.request().method() === 'PUT',
    );
    await config.getByRole('button', { name: 'Save draft' }).click();
    expect((await refused).status()).toBe(400);
    await config.getByRole('alert').getByText('The draft was not saved: the network setting has a problem.').waitFor();
    const problem = config.locator('.field-errors li');
    await problem.waitFor();
    expect(await problem.textContent()).toBe(
      `Line 2: "${BAD_ENTRY}" must be a host name, a "*." wildcard or an IP literal, with an optional port from 1 to 65535`,
    );
    expect(await allow.getAttribute('aria-invalid')).toBe('true');
    const errorsId = await config.locator('.field-errors').getAttribute('id');
    expect((await allow.getAttribute('aria-describedby'))?.split(' ')).toContain(errorsId);
    await config.screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-network-invalid.png` });

    // Fixed: the server stores the entries normalised, and the editor shows them so.
    await allow.fill('api.example.com\nFiles.Example.NET:8443');
    await config.getByRole('button', { name: 'Save draft' }).click();
    await config.getByRole('status').getByText('Draft saved.').waitFor();
    expect(await config.locator('.field-errors').count()).toBe(0);
    expect(await allow.inputValue()).toBe('api.example.com\nfiles.example.net:8443');
    const diff = config.locator('.diff-panel');
    await diff.getByText('runtime.sandbox.network.mode: not set → "allowlist"').waitFor();

    await config.getByRole('button', { name: 'Publish' }).click();
    await config.getByRole('status').getByText('Published.').waitFor();
    await diff.getByText('Draft and published are the same.').waitFor();
    const saved = await admin(`/v1/admin/agents/${agentId}/config`);
    expect(saved.published.runtime.sandbox.network).toEqual({
      mode: 'allowlist',
      allow: ['api.example.com', 'files.example.net:8443'],
    });
    await config.screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-network.png` });
    expectCleanPage();
  });

  it("lists the tenant's allowed and refused connections in its Egress section", async () => {
    const now = Date.now();
    const owner = { tenant_id: tenantId, agent_id: agentId, user_id: 'egress-user', workspace_id: 'wks_egress' };
    recordEgress([
      {
        id: 'egr_e2e_allowed',
        at: now - 5_000,
        ...owner,
        host: 'api.example.com',
        port: 443,
        address: '203.0.113.7',
        decision: 'allowed',
        reason: null,
        bytes_up: 1536,
        bytes_down: 3 * 1024 * 1024,
        duration_ms: 420,
        count: 1,
      },
      {
        id: 'egr_e2e_refused',
        at: now - 1_000,
        ...owner,
        host: 'metadata.internal.example',
        port: 443,
        address: '169.254.169.254',
        decision: 'refused',
        reason: 'private_address',
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0,
        count: 3,
      },
    ]);

    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: TENANT }).click();
    await heading(TENANT).waitFor();
    const egress = region('Egress');
    const table = egress.getByRole('table');
    await table.waitFor();
    const headers = await table.getByRole('columnheader').allTextContents();
    expect(headers).toEqual([
      'At',
      'Agent',
      'User',
      'Destination',
      'Address',
      'Decision',
      'Reason',
      'Sent',
      'Received',
      'Count',
    ]);
    const rows = table.getByRole('row');
    // The header row, then newest first: the refusal, then the allowed connection.
    expect(await rows.count()).toBe(3);
    const cells = async (index: number) => (await rows.nth(index).getByRole('cell').allTextContents()).slice(1);
    expect(await cells(1)).toEqual([
      agentId,
      'egress-user',
      'metadata.internal.example:443',
      '169.254.169.254',
      'Refused',
      'Private, local or reserved address',
      '—',
      '—',
      '3',
    ]);
    expect(await cells(2)).toEqual([
      agentId,
      'egress-user',
      'api.example.com:443',
      '203.0.113.7',
      'Allowed',
      '—',
      '1.5 KB',
      '3.0 MB',
      '1',
    ]);
    // Times to the second, and the agent links to its page.
    const time = rows.nth(1).locator('time');
    expect(await time.getAttribute('datetime')).toBe(new Date(now - 1_000).toISOString());
    expect(await time.textContent()).toMatch(/\d:\d\d:\d\d/);
    expect(await rows.nth(1).getByRole('link', { name: agentId }).getAttribute('href')).toBe(`#/agents/${agentId}`);
    expect(await egress.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await egress.screenshot({ path: `${CONSOLE_SCREENSHOTS}/tenant-egress.png` });

    // Fifty to a page: with fifty older refusals, the last two rows come with "Load more".
    recordEgress(
      Array.from({ length: 50 }, (_, index) => ({
        id: `egr_e2e_older_${String(index).padStart(2, '0')}`,
        at: now - 60_000 - index * 1_000,
        ...owner,
        host: `older-${index}.example.com`,
        port: 443,
        address: null,
        decision: 'refused',
        reason: 'policy',
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0,
        count: 1,
      })),
    );
    await egress.getByRole('button', { name: 'Refresh' }).click();
    await egress.getByRole('button', { name: 'Load more' }).click();
    await rows.nth(52).waitFor();
    expect(await rows.count()).toBe(53);
    expect(await cells(52)).toEqual([
      agentId,
      'egress-user',
      'older-49.example.com:443',
      'Not resolved',
      'Refused',
      "Not in the agent's network policy",
      '—',
      '—',
      '1',
    ]);
    expect(await egress.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    expectCleanPage();
  });

  it('shows the egress line on the status page', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Status', exact: true }).click();
    await heading('Status').waitFor();
    const line = statusValue(page, 'Sandbox egress');
    await line.waitFor();
    expect(await line.textContent()).toBe(`Onall tenants · index ${PACKAGE_INDEX} · ports 443, 8443`);
    expectCleanPage();
  });

  it('passes axe-core with no violations at all on the tenant, agent and status pages', async () => {
    const axe = await axeContext(browser);
    try {
      await axe.addCookies([{ name: COOKIE, value: cookieValue, url: mordn.url, httpOnly: true, sameSite: 'Strict' }]);
      const base = `${mordn.url}/console/`;
      const results = {
        // The Egress table with its rows.
        tenant: await axeViolations(axe, `${base}#/tenants/${encodeURIComponent(tenantId)}`, (each) =>
          each.getByRole('region', { name: 'Egress', exact: true }).getByRole('row').nth(2),
        ),
        // The published allowlist: the mode, its entries and the operator's ceiling.
        agent: await axeViolations(axe, `${base}#/agents/${encodeURIComponent(agentId)}`, (each) =>
          each.locator('.network-ceiling'),
        ),
        status: await axeViolations(axe, `${base}#/status`, (each) => statusValue(each, 'Sandbox egress')),
      };
      expect(results).toEqual({ tenant: [], agent: [], status: [] });
    } finally {
      await axe.close();
    }
  });
});
