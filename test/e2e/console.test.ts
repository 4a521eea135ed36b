import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readJson } from '../support/json.js';
import {
  type ChatCompletionRequest,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../support/scripted-model-server.js';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import {
  axeContext,
  CONSOLE_SCREENSHOTS,
  ensureConsoleBuilt,
  FOCUSED_NAME,
  literal,
  renderedLines,
  reportFailedStep,
  seriousViolations,
  statusValue,
  watchConsolePage,
} from './support/console-page.js';
import { type MordnService, startMordnService } from './support/mordn-service.js';

/** The admin token `startMordnService` gives `mordn serve` (a copy: that module does not export it). */
const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';
const WRONG_TOKEN = `wrong-token-${randomBytes(8).toString('hex')}`;
const COOKIE = 'mordn_console';
const TENANT = 'Console tenant';
const AGENT = 'Console agent';
const PUBLISH_FIRST =
  'Managed sandboxes are not available for this agent: turn on "Enable sandboxes" and publish the agent first.';
/** The model runs `echo <prefix>-$((6 * 7))`: only a shell that really ran prints `<prefix>-42`. */
const CANARY_PREFIX = `canary-${randomBytes(6).toString('hex')}`;
const CANARY = `${CANARY_PREFIX}-42`;
const ANSWER = `The sandbox printed ${CANARY}.`;

/**
 * The model: with no tool result since the user's message, run the canary in the sandbox; then
 * say whether the tool's result carried the canary's output.
 */
function script(request: ChatCompletionRequest): ModelTurn {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  const results = request.messages.slice(lastUser).filter((message) => message.role === 'tool');
  if (results.length === 0) {
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo ${CANARY_PREFIX}-$((6 * 7))` } }] };
  }
  return { text: JSON.stringify(results).includes(CANARY) ? ANSWER : 'The sandbox printed something else.' };
}

const unavailable = browserUnavailableReason();
if (unavailable) console.warn(`Skipping the console browser test: ${unavailable}.`);

describe.skipIf(unavailable !== undefined)('the web operator console in Chromium', { timeout: 240_000 }, () => {
  let model: ScriptedModelServer;
  let mordn: MordnService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];
  const visited: string[] = [];
  /** Every answer of 404 the page received: a console that works asks for nothing that is not there. */
  const notFound: string[] = [];
  /** The preview chat's history requests (`…/preview?chatId=…`) and their statuses. */
  const historyLoads: Array<{ url: string; status: number }> = [];
  /** Values that must never appear in a URL the page requested. */
  const secrets: string[] = [ADMIN_TOKEN, WRONG_TOKEN];
  let cookieValue = '';
  let sessionId = '';
  let tenantId = '';
  let agentId = '';
  let keyId = '';
  let keySecret = '';

  const previewUser = () => `console-preview:${sessionId}`;
  const actor = () => `console:${sessionId}`;
  const shot = (name: string) => page.screenshot({ path: `${CONSOLE_SCREENSHOTS}/${name}.png`, fullPage: true });
  /** A request from Node with the session cookie (and only the headers given). */
  const withCookie = (route: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    fetch(`${mordn.url}${route}`, {
      ...init,
      headers: { Cookie: `${COOKIE}=${cookieValue}`, ...(init.headers ?? {}) },
    });
  const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });
  const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
  const storageSizes = () => page.evaluate('[localStorage.length, sessionStorage.length]');
  /** What the servers said, for a failure the page alone does not explain. */
  const diagnostics = () =>
    [
      `page errors: ${pageErrors.join('\n') || 'none'}`,
      `CSP violations: ${cspViolations.join('\n') || 'none'}`,
      `mordn:\n${mordn.process.stdout.slice(-40).join('\n')}\n${mordn.process.stderr.join('').slice(-4_000)}`,
    ].join('\n\n');
  const explained = (error: Error) => {
    throw new Error(`${error.message}\n\n${diagnostics()}`);
  };
  const expectCleanPage = () => {
    expect(pageErrors).toEqual([]);
    expect(cspViolations).toEqual([]);
    for (const url of visited) for (const secret of secrets) expect(url).not.toContain(secret);
    expect(notFound).toEqual([]);
  };
  const userBubbles = () =>
    page.getByRole('region', { name: 'Preview chat', exact: true }).locator('.mordn-message.mordn-user');

  beforeAll(async () => {
    const built = await ensureConsoleBuilt();
    if (built) console.log('console: built dist/console');
    await mkdir(CONSOLE_SCREENSHOTS, { recursive: true });
    model = await startScriptedModelServer(script);
    mordn = await startMordnService({
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'bwrap',
      MORDN_MODEL: 'openai-compatible:scripted-1',
      MORDN_MODEL_BASE_URL: model.baseUrl,
    });
    browser = await launchChromium();
    context = await browser.newContext();
    page = await context.newPage();
    watchConsolePage(page, { pageErrors, cspViolations });
    page.on('request', (request) => visited.push(request.url()));
    page.on('response', (response) => {
      if (response.status() === 404) notFound.push(`${response.request().method()} ${response.url()}`);
      if (/\/preview\?chatId=/.test(response.url()))
        historyLoads.push({ url: response.url(), status: response.status() });
    });
  }, 180_000);

  // A failed step leaves its page behind: a screenshot and the page's text, to see what the SPA showed.
  afterEach(async ({ task }) => {
    if (task.result?.state !== 'fail' || !page) return;
    await reportFailedStep(page, task.name);
  });

  afterAll(async () => {
    await browser?.close();
    await mordn?.stop();
    await model?.close();
  });

  it('signs in: a wrong token is refused without a cookie, the keyboard alone works, the cookie is strict', async () => {
    await page.goto(`${mordn.url}/console/`);
    await heading('Sign in').waitFor();
    await shot('sign-in');

    // From the keyboard alone: Tab reaches the token field, then the button; Enter submits.
    await page.locator('body').focus();
    const reached: string[] = [];
    for (let step = 0; step < 6 && reached.at(-1) !== 'Admin token'; step += 1) {
      await page.keyboard.press('Tab');
      reached.push((await page.evaluate(FOCUSED_NAME)) as string);
    }
    expect(reached.at(-1)).toBe('Admin token');
    await page.keyboard.type(WRONG_TOKEN);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(FOCUSED_NAME)).toBe('Sign in');
    const refused = page.waitForResponse((response) => response.url().endsWith('/console/api/session'));
    await page.keyboard.press('Enter');
    expect((await refused).status()).toBe(401);
    await page.getByRole('alert').getByText('That is not the admin token', { exact: false }).waitFor();
    await heading('Sign in').waitFor();
    expect(await page.getByLabel('Admin token').inputValue()).toBe('');
    expect(await context.cookies()).toEqual([]);

    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Tenants').waitFor();
    const cookies = await context.cookies();
    expect(cookies.map((cookie) => cookie.name)).toEqual([COOKIE]);
    const cookie = cookies[0];
    expect(cookie).toMatchObject({ name: COOKIE, httpOnly: true, sameSite: 'Strict', path: '/', secure: false });
    cookieValue = cookie?.value ?? '';
    expect(cookieValue).toMatch(/^[A-Za-z0-9_-]{43}$/);
    secrets.push(cookieValue);

    const session = await readJson(await withCookie('/console/api/session'));
    expect(session.sessionId).toMatch(/^cs_/);
    sessionId = session.sessionId;
    secrets.push(session.csrfToken);
    expect(await storageSizes()).toEqual([0, 0]);
    expect(await page.evaluate('document.cookie')).toBe('');
    await shot('tenants');
    expectCleanPage();
  });

  it('refuses a write without the CSRF header, from Node and from the page', async () => {
    const fromNode = await withCookie('/v1/admin/tenants', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Forged tenant' }),
    });
    expect(fromNode.status).toBe(403);
    expect((await readJson(fromNode)).code).toBe('CSRF_FAILED');

    const fromPage = (await page.evaluate(
      `fetch('/v1/admin/tenants', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Forged tenant' }) }).then(async (response) => [response.status, (await response.json()).code])`,
    )) as [number, string];
    expect(fromPage).toEqual([403, 'CSRF_FAILED']);
    expect(
      (await readJson(await withCookie('/v1/admin/tenants'))).items.map((each: { name: string }) => each.name),
    ).not.toContain('Forged tenant');
  });

  it('creates a tenant, an agent and a key shown once, and revokes the key', async () => {
    await page.getByLabel('Tenant name').fill(TENANT);
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.getByRole('status').getByText(`Tenant ${TENANT} created.`).waitFor();
    await page.getByRole('link', { name: TENANT, exact: true }).click();
    await heading(TENANT).waitFor();
    tenantId = decodeURIComponent(new URL(page.url()).hash.replace('#/tenants/', ''));
    expect(tenantId).toMatch(/^ten_[0-9a-f]+$/);
    await shot('tenant');

    await page.getByLabel('Agent name').fill(AGENT);
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('status').getByText(`Agent ${AGENT} created.`).waitFor();
    await page.getByRole('link', { name: AGENT, exact: true }).click();
    await heading(AGENT).waitFor();
    agentId = decodeURIComponent(new URL(page.url()).hash.replace('#/agents/', ''));
    expect(agentId).toMatch(/^agt_[0-9a-f]+$/);

    const keys = page.getByRole('region', { name: 'Keys', exact: true });
    await keys.getByText('No keys yet.').waitFor();
    expect(await keys.getByLabel('read', { exact: true }).isChecked()).toBe(true);
    expect(await keys.getByLabel('write', { exact: true }).isChecked()).toBe(true);
    const answered = page.waitForResponse(
      (response) =>
        response.url().endsWith(`/v1/admin/agents/${agentId}/keys`) && response.request().method() === 'POST',
    );
    await keys.getByRole('button', { name: 'Create key' }).click();
    const created = await (await answered).json();
    keyId = created.id;
    keySecret = await keys.getByLabel('New API key').inputValue();
    expect(keySecret).toMatch(/^mordn_[A-Za-z0-9_-]{43}$/);
    expect(keySecret).toBe(created.key);
    secrets.push(keySecret);
    await keys.getByText('Store this key now: it will not be shown again.', { exact: true }).waitFor();
    await keys.getByRole('row').filter({ hasText: keyId }).getByText('Active').waitFor();
    await keys.screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-keys.png` });

    // Away and back: the secret is gone for good.
    await nav('Tenants').click();
    await heading('Tenants').waitFor();
    await page.goBack();
    await heading(AGENT).waitFor();
    await keys.getByRole('row').filter({ hasText: keyId }).waitFor();
    expect(await keys.getByLabel('New API key').count()).toBe(0);
    expect(await page.getByText('Store this key now', { exact: false }).count()).toBe(0);
    expect(await page.content()).not.toContain(keySecret);

    const row = keys.getByRole('row').filter({ hasText: keyId });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await keys.getByRole('status').getByText(`Key ${keyId} revoked.`).waitFor();
    await row.getByText('Revoked').waitFor();
    expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    const refused = await fetch(`${mordn.url}/v1/me`, {
      headers: { Authorization: `Bearer ${keySecret}`, 'X-Chat-User': 'someone' },
    });
    expect(refused.status).toBe(401);
    expect(await storageSizes()).toEqual([0, 0]);
    expectCleanPage();
  });

  it('saves a draft that turns sandboxes on, and the diff says so', async () => {
    const config = page.getByRole('region', { name: 'Configuration', exact: true });
    const diff = config.locator('.diff-panel');
    await config.getByLabel('Instructions').waitFor();
    // A first published config, without sandboxes: what the draft is then compared with.
    await config.getByLabel('Instructions').fill('Run what the user asks in the sandbox, then say what it printed.');
    await config.getByRole('button', { name: 'Save draft' }).click();
    await config.getByRole('status').getByText('Draft saved.').waitFor();
    await config.getByRole('button', { name: 'Publish' }).click();
    await config.getByRole('status').getByText('Published.').waitFor();
    await diff.getByText('Draft and published are the same.').waitFor();

    const sandboxes = config.getByRole('switch', { name: 'Enable sandboxes' });
    expect(await sandboxes.isChecked()).toBe(false);
    await sandboxes.check();
    await config.getByRole('button', { name: 'Save draft' }).click();
    await config.getByRole('status').getByText('Draft saved.').waitFor();
    await diff.getByText('runtime.sandbox.enabled: not set → on').waitFor();
    expect(await diff.getByText('Draft and published are the same.').count()).toBe(0);
    const saved = await readJson(await withCookie(`/v1/admin/agents/${agentId}/config`));
    expect(saved.draft.runtime).toEqual({ sandbox: { enabled: true } });
    expect(saved.published.runtime).toBeUndefined();
    await config.screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-config.png` });
    expectCleanPage();
  });

  it('previews the draft: before publishing, the chat asks to publish first', async () => {
    const chat = page.getByRole('region', { name: 'Preview chat', exact: true });
    await chat.getByLabel('Message').fill('Print the canary, please.');
    await chat.getByRole('button', { name: 'Send' }).click();
    // The component's notice, and its live region announcing the same sentence.
    const notice = chat.getByRole('paragraph').filter({ hasText: PUBLISH_FIRST });
    await notice.waitFor().catch(explained);
    expect(await notice.textContent()).toBe(PUBLISH_FIRST);
    await chat.getByText('Sandboxes are not available', { exact: true }).waitFor();
    expect(await chat.getByRole('status').textContent()).toBe(PUBLISH_FIRST);
    // Refused before the model was asked anything.
    expect(model.requests.length).toBe(0);
    // A refused message does not stay as a sent bubble: it goes back to the message box, so
    // sending it again shows it once. Refused again, it again leaves no bubble behind.
    await expect.poll(() => userBubbles().count()).toBe(0);
    expect(await chat.getByLabel('Message').inputValue()).toBe('Print the canary, please.');
    const refusedAgain = page.waitForResponse(
      (response) => response.url().endsWith('/preview') && response.request().method() === 'POST',
    );
    await chat.getByRole('button', { name: 'Send' }).click();
    expect((await refusedAgain).status()).toBe(503);
    await notice.waitFor();
    await expect.poll(() => userBubbles().count()).toBe(0);
    expect(await chat.getByLabel('Message').inputValue()).toBe('Print the canary, please.');
    expect(model.requests.length).toBe(0);
    // The page loaded the preview chat, which has no message yet, without a 404.
    expect(historyLoads.length).toBeGreaterThan(0);
    expect(historyLoads.filter((load) => load.status !== 200)).toEqual([]);
    await page
      .getByRole('region', { name: 'Preview', exact: true })
      .screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-preview-publish-first.png` });
    expectCleanPage();
  });

  it('publishes; the preview then runs the sandbox tool and answers with its output', async () => {
    const config = page.getByRole('region', { name: 'Configuration', exact: true });
    await config.getByRole('button', { name: 'Publish' }).click();
    await config.getByRole('status').getByText('Published.').waitFor();
    await config.locator('.diff-panel').getByText('Draft and published are the same.').waitFor();

    // The same preview chat that was refused: asking again now runs in the sandbox.
    const preview = page.getByRole('region', { name: 'Preview', exact: true });
    const chat = page.getByRole('region', { name: 'Preview chat', exact: true });
    // Without a reload, the picker follows the published config: documents such as CSV, up to 10 MB.
    const hint = chat.locator('.mordn-hint');
    await hint.getByText('up to 10.0 MB each.', { exact: false }).waitFor().catch(explained);
    expect(await hint.textContent()).not.toContain('Attach images up to 5.0 MB each.');
    expect(await chat.getByLabel('Attach files').getAttribute('accept')).toContain('text/csv');
    await chat.getByLabel('Attach files').setInputFiles({
      name: 'figures.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('month,total\njan,6\nfeb,7\n'),
    });
    await chat
      .getByRole('list', { name: 'Attachments to send' })
      .getByText('figures.csv', { exact: false })
      .first()
      .waitFor()
      .catch(explained);
    expect(await chat.locator('.mordn-problem').count()).toBe(0);
    await chat.getByLabel('Message').fill('Print the canary, please.');
    await chat.getByRole('button', { name: 'Send' }).click();
    await chat.getByText(ANSWER, { exact: true }).waitFor({ timeout: 60_000 }).catch(explained);
    expect(await chat.getByText(PUBLISH_FIRST).count()).toBe(0);
    // One bubble for the one message sent, with its file: nothing of the refused sends is left.
    expect(await userBubbles().count()).toBe(1);
    expect(await userBubbles().first().textContent()).toContain('Print the canary, please.');
    expect(await userBubbles().first().textContent()).toContain('figures.csv');
    // The component shows a tool call's name and progress, not its output: the canary comes back
    // through the answer, which the script gives only when the tool's result carried it.
    const tool = chat.locator('.mordn-tool[data-progress="done"]', { hasText: 'Running code' });
    expect(await tool.count()).toBe(1);
    expect(await chat.locator('.mordn-tool').allTextContents()).toEqual(['Running codedone']);
    await preview.screenshot({ path: `${CONSOLE_SCREENSHOTS}/agent-preview.png` });
    await shot('agent');
    expectCleanPage();
  });

  it("lists the preview user's workspace, erases it after a dry run, and the list drops it", async () => {
    const workspaces = page.getByRole('region', { name: 'Workspaces', exact: true });
    // The list was read before the preview made its workspace.
    await workspaces.getByRole('button', { name: 'Refresh' }).click();
    const row = workspaces.getByRole('row').filter({ hasText: previewUser() });
    await row.waitFor();
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('bwrap');
    // What the service records, and nothing it does not: no file count column of "Not recorded".
    expect(await workspaces.getByRole('columnheader').allTextContents()).toEqual([
      'Owner (user id)',
      'Backend',
      'Size (last measured)',
      'Last used',
      'Deleted after',
      'Actions',
    ]);
    expect(await workspaces.getByText('Not recorded').count()).toBe(0);

    await row.getByRole('button', { name: 'Erase…' }).click();
    // One erase panel at a time, in the section: its heading names the user.
    await workspaces.getByRole('heading', { name: `Erase the data of ${previewUser()}`, exact: true }).waitFor();
    const panel = workspaces;
    await panel.getByText('A real run would erase:').waitFor();
    const counted = (kind: string) => panel.locator('dl div').filter({ has: page.locator('dt', { hasText: kind }) });
    expect(await counted('Workspaces').locator('dd').textContent()).toBe('1');
    // Erased with the workspace, always: the preview ran no network, so nothing is recorded.
    expect(await counted('Egress records').locator('dd').textContent()).toBe('0');
    // Kinds not included are neither counted nor shown; including the chats counts the preview's one.
    expect(await counted('Chats').count()).toBe(0);
    await panel.getByLabel('Chats').check();
    await counted('Chats').locator('dd').getByText('1', { exact: true }).waitFor();
    await workspaces.screenshot({ path: `${CONSOLE_SCREENSHOTS}/workspaces-dry-run.png` });
    // Labels are laid out in whole words ("Workspaces", never "WORKSPACE / S"), from a phone's width
    // up, also where labels come out larger (a browser's minimum font size, a wider font): set here
    // through the CSSOM, which the console's CSP allows.
    const labelSizes = (size: string) =>
      page.evaluate(
        `document.querySelectorAll('.erase-panel dl dt').forEach((label) => { label.style.fontSize = '${size}'; })`,
      );
    for (const size of ['', '18px']) {
      await labelSizes(size);
      for (const width of [1280, 1024, 600, 390]) {
        await page.setViewportSize({ width, height: 720 });
        const labels = (await page.evaluate(renderedLines('.erase-panel dl dt'))) as string[][];
        // Its lines joined by spaces: a word broken across lines ("Workspace", "s") shows as two.
        expect(
          labels.map((lines) => lines.map((line) => line.trim()).join(' ')),
          `${width} px ${size}`,
        ).toEqual(['Workspaces', 'Egress records', 'Chats']);
      }
    }
    await labelSizes('');
    await page.setViewportSize({ width: 1280, height: 720 });
    await panel.getByRole('button', { name: 'Erase now' }).click();

    await workspaces
      .getByText(literal(`Erase complete for ${previewUser()}.`))
      .first()
      .waitFor();
    await workspaces.getByText('No workspaces yet.').waitFor();
    expect(await workspaces.getByRole('row').filter({ hasText: previewUser() }).count()).toBe(0);
    await workspaces.screenshot({ path: `${CONSOLE_SCREENSHOTS}/workspaces.png` });
    const listed = await readJson(await withCookie(`/v1/admin/agents/${agentId}/workspaces`));
    expect(listed.items).toEqual([]);
    expectCleanPage();
  });

  it('shows sandboxes on with the bwrap backend on the status page', async () => {
    await nav('Status').click();
    await heading('Status').waitFor();
    await statusValue(page, 'Version').waitFor();
    expect(await statusValue(page, 'Sandboxes (operator switch)').textContent()).toBe('On');
    expect(await statusValue(page, 'Sandbox backend').textContent()).toBe('bwrap');
    await shot('status');
    expectCleanPage();
  });

  it('shows every step in the audit log under the console session', async () => {
    await nav('Audit log').click();
    await heading('Audit log').waitFor();
    await page.getByRole('table').waitFor();
    const expected: Array<[string, string, string]> = [
      ['POST', '/console/api/session', ''],
      ['POST', '/v1/admin/tenants', ''],
      ['POST', '/v1/admin/tenants/:tenantId/agents', `tenantId=${tenantId}`],
      ['POST', '/v1/admin/agents/:agentId/keys', `agentId=${agentId}`],
      ['DELETE', '/v1/admin/keys/:keyId', `keyId=${keyId}`],
      ['PUT', '/v1/admin/agents/:agentId/config', `agentId=${agentId}`],
      ['POST', '/v1/admin/agents/:agentId/config/publish', `agentId=${agentId}`],
      ['POST', '/v1/admin/agents/:agentId/users/:userId/erase', `userId=${previewUser()}`],
    ];
    const missing: string[] = [];
    for (const [method, route, target] of expected) {
      const rows = page
        .getByRole('row')
        .filter({ has: page.getByRole('cell', { name: actor(), exact: true }) })
        .filter({ has: page.getByRole('cell', { name: method, exact: true }) })
        .filter({ has: page.getByRole('cell', { name: route, exact: true }) })
        .filter({ hasText: target })
        .filter({ has: page.getByRole('cell', { name: 'ok', exact: true }) });
      if ((await rows.count()) === 0) missing.push(`${method} ${route} ${target}`);
    }
    if (missing.length > 0) {
      const entries = await readJson(await withCookie('/v1/admin/audit?limit=50'));
      throw new Error(`audit rows missing: ${missing.join('; ')}\n${JSON.stringify(entries.items, null, 1)}`);
    }
    // Times to the second: steps taken seconds apart are told apart.
    const times = await page.getByRole('table').locator('tbody td:first-child time').allTextContents();
    expect(times.length).toBeGreaterThanOrEqual(expected.length);
    for (const time of times) expect(time).toMatch(/\d:\d{2}:\d{2}/);
    // Identifiers never break inside a word: a route wraps only after a slash, the others not at all.
    let wrapped = 0;
    for (const width of [1280, 1024, 800]) {
      await page.setViewportSize({ width, height: 720 });
      const routes = (await page.evaluate(renderedLines('td code.chip:not(.chip-whole)'))) as string[][];
      expect(routes.length).toBeGreaterThanOrEqual(expected.length);
      for (const lines of routes) {
        for (const line of lines.slice(0, -1)) expect(line, `${width} px: ${JSON.stringify(lines)}`).toMatch(/\/$/);
        if (lines.length > 1) wrapped += 1;
      }
      const whole = (await page.evaluate(renderedLines('td code.chip-whole'))) as string[][];
      expect(whole.filter((lines) => lines.length !== 1)).toEqual([]);
    }
    // Some did wrap (so the check above saw line breaks to judge).
    expect(wrapped).toBeGreaterThan(0);
    await page.setViewportSize({ width: 1280, height: 720 });
    await shot('audit');
    expectCleanPage();
  });

  it('passes axe-core without serious violations on the sign-in, tenants, agent and audit pages', async () => {
    const axe = await axeContext(browser);
    try {
      const base = `${mordn.url}/console/`;
      const results: Record<string, unknown[]> = {};
      results['sign-in'] = await seriousViolations(axe, base, (each) =>
        each.getByRole('heading', { level: 1, name: 'Sign in' }),
      );
      await axe.addCookies([{ name: COOKIE, value: cookieValue, url: mordn.url, httpOnly: true, sameSite: 'Strict' }]);
      results.tenants = await seriousViolations(axe, `${base}#/tenants`, (each) =>
        each.getByRole('link', { name: TENANT, exact: true }),
      );
      results.agent = await seriousViolations(axe, `${base}#/agents/${encodeURIComponent(agentId)}`, (each) =>
        each.getByRole('region', { name: 'Preview chat', exact: true }).getByRole('button', { name: 'Send' }),
      );
      results.audit = await seriousViolations(axe, `${base}#/audit`, (each) => each.getByRole('table'));
      expect(results).toEqual({ 'sign-in': [], tenants: [], agent: [], audit: [] });
    } finally {
      await axe.close();
    }
  });

  it('signs out: back to sign-in, the cookie is gone and the old one is refused', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading('Sign in').waitFor();
    await page.getByRole('status').getByText('Signed out.').waitFor();
    expect((await context.cookies()).filter((cookie) => cookie.name === COOKIE)).toEqual([]);
    const stale = await withCookie('/console/api/session');
    expect(stale.status).toBe(401);
    expect((await readJson(stale)).code).toBe('CONSOLE_SIGNED_OUT');
    expect(await storageSizes()).toEqual([0, 0]);

    // The operator's own view: the sign-out is on record, and the preview user has nothing left.
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
    const audit = await readJson(await fetch(`${mordn.url}/v1/admin/audit?limit=5`, { headers: admin }));
    expect(audit.items).toContainEqual(
      expect.objectContaining({ actor: actor(), method: 'DELETE', route: '/console/api/session', status: 204 }),
    );
    const left = await fetch(
      `${mordn.url}/v1/admin/agents/${agentId}/users/${encodeURIComponent(previewUser())}/erase`,
      {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ dryRun: true, include: ['uploads', 'artifacts', 'chats'] }),
      },
    );
    expect((await readJson(left)).counts).toEqual({
      workspaces: 0,
      egressDecisions: 0,
      uploads: 0,
      artifacts: 0,
      chats: 0,
    });
    await shot('signed-out');
    expectCleanPage();
  });
});
