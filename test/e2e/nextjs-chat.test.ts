import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { totalsCommand } from '../support/docs-chat-model.js';
import { type Json, readJson } from '../support/json.js';
import {
  type ChatCompletionRequest,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../support/scripted-model-server.js';
import { assembleWithSdk, readUiChunks } from '../support/ui-stream.js';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import { type MordnService, startMordnService } from './support/mordn-service.js';
import { type NextApp, startNextApp } from './support/next-app.js';

const SALES = 'region,amount\nnorth,3\nsouth,5\nnorth,4\neast,10\n';
const SUMMARY = 'region,total\neast,10\nnorth,7\nsouth,5\n';
const CHART = 'x,y\n1,2\n';
const USER = 'ada';

const REPORT = 'week,orders\n1,12\n2,15\n';
const REPORT_SHELL = REPORT.replaceAll('\n', '\\n');

/** Prints a line every 0.4 s (the last to stderr) for about 3 s. */
const COUNT_SLOWLY = 'for i in $(seq 1 7); do echo line-$i; sleep 0.4; done; echo finished >&2; sleep 0.4';

const STORY = Array.from({ length: 60 }, (_, index) => (index === 0 ? 'Once upon a time ' : `part ${index} `));

/**
 * Turns for the component's own cases, chosen by the user's latest message: a slow story (to stop
 * mid-answer), and code run in the sandbox followed by a read of a file that does not exist (a
 * running, a done and a failed tool call); undefined for the main scenario's messages.
 */
function componentScript(request: ChatCompletionRequest): ModelTurn | undefined {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  const prompt = JSON.stringify(request.messages[lastUser]);
  const toolResults = request.messages.slice(lastUser).filter((message) => message.role === 'tool').length;
  if (prompt.includes('long story')) return { text: STORY, deltaDelayMs: 250 };
  if (prompt.includes('Reload-proof report')) {
    const reportTurns: ModelTurn[] = [
      {
        toolCalls: [{ name: 'sandbox_exec', arguments: { command: `sleep 4; printf '${REPORT_SHELL}' > report.csv` } }],
      },
      { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'report.csv', filename: 'report.csv' } }] },
      { text: ['Your report ', 'is ready.'] },
    ];
    return reportTurns[toolResults] ?? { text: 'Done.' };
  }
  if (prompt.includes('Count slowly')) {
    const countTurns: ModelTurn[] = [
      { toolCalls: [{ name: 'sandbox_exec', arguments: { command: COUNT_SLOWLY } }] },
      { text: 'Counted.' },
    ];
    return countTurns[toolResults] ?? { text: 'Done.' };
  }
  if (!prompt.includes('Run some code')) return undefined;
  const turns: ModelTurn[] = [
    { toolCalls: [{ name: 'sandbox_exec', arguments: { command: 'sleep 2; echo ok' } }] },
    { toolCalls: [{ name: 'sandbox_read_file', arguments: { path: 'missing.txt' } }] },
    { text: 'Ran it.' },
  ];
  return turns[toolResults] ?? { text: 'Done.' };
}

/**
 * The model's side of the scenario, one step per tool result since the user's message: import the
 * attachment the prompt references, summarize it with python3, publish the summary, answer.
 */
function script(request: ChatCompletionRequest): ModelTurn {
  const component = componentScript(request);
  if (component) return component;
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
    {
      toolCalls: [
        { name: 'sandbox_exec', arguments: { command: totalsCommand(imported ?? 'uploads/sales.csv', 'summary.csv') } },
      ],
    },
    { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'summary.csv', filename: 'summary.csv' } }] },
    { text: ['Here is the summary ', 'by region.'] },
  ];
  return turns[sinceUser.filter((message) => message.role === 'tool').length] ?? { text: 'Done.' };
}

/** What a message says, whatever URL its files were signed with: comparable across readers. */
function gist(message: Json) {
  return (message?.parts ?? [])
    .filter((part: Json) => part.type !== 'step-start')
    .map((part: Json) => {
      if (part.type === 'text') return { text: part.text };
      if (part.type === 'file') {
        const file = part.providerMetadata?.mordn?.sandboxFile ?? part;
        return { file: file.filename, mediaType: part.mediaType, storagePath: file.storagePath };
      }
      return { tool: part.toolName ?? part.type, state: part.state, input: part.input };
    });
}

/** The card of a file, by its name. */
const fileCard = (page: Page, filename: string) => page.locator('.file-card', { hasText: filename });

/** A tool call's row, by its plain-words label and progress. */
const toolRow = (page: Page, label: string, progress: 'running' | 'done' | 'failed') =>
  page.locator(`.mordn-tool[data-progress="${progress}"]`, { hasText: label });

/** Where the component's cases keep their screenshots, to judge the page as a user sees it. */
const SCREENSHOTS = 'test-results/nextjs';

/** A MIME type as it appears in a raw server message (`text/csv`, `application/pdf`…). */
const MIME_TYPE = /\b(?:application|text|image)\/[\w.+*-]+/;

/** Signs a user in and waits for the chat the page opens; answers the chat's id. */
async function signIn(page: Page, baseUrl: string, user: string): Promise<string> {
  await page.goto(baseUrl);
  await page.getByLabel('Name').fill(user);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\?chat=[0-9a-f-]{36}$/);
  return new URL(page.url()).searchParams.get('chat') as string;
}

/** The focused element's accessible name, as far as these tests need it: aria-label, label, or text. */
const FOCUSED_NAME =
  "(() => { const active = document.activeElement; return active?.getAttribute('aria-label') ?? active?.labels?.[0]?.textContent ?? active?.textContent ?? ''; })()";

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/** The serious and critical axe-core violations of the page as it stands. */
async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  const source = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: source });
  // The test program has no DOM types: the page runs these as plain expressions.
  const violations = (await page.evaluate('axe.run().then((result) => result.violations)')) as AxeViolation[];
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

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

  it('refuses a file of a type not accepted, or over the size limit, with a readable sentence and no card', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await signIn(page, app.url, 'lin');
      const picker = page.getByLabel('Attach files');
      await expect.poll(() => picker.getAttribute('accept')).toContain('text/csv');
      const problems = page.locator('.mordn-problem');

      // Ruled out by the picker's hint before any upload…
      await picker.setInputFiles({
        name: 'setup.exe',
        mimeType: 'application/x-msdownload',
        buffer: Buffer.from('MZ'),
      });
      await problems.getByText('setup.exe: this file type is not accepted. Accepted: images, PDF').waitFor();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('setup.exe');

      // …by the server, whose own sentence lists raw MIME types, reworded the same way…
      await picker.setInputFiles({ name: 'report.pdf', mimeType: 'application/pdf', buffer: Buffer.from('not a pdf') });
      await problems.getByText('report.pdf: this file type is not accepted.').waitFor();

      // …and a file over bootstrap's maxBytes (10 MB for the managed set).
      const big = Buffer.alloc(10 * 1024 * 1024 + 1, 'a');
      await picker.setInputFiles({ name: 'big.csv', mimeType: 'text/csv', buffer: big });
      await problems.getByText('big.csv is too large: files can be up to 10.0 MB.').waitFor();

      expect(await problems.textContent()).not.toMatch(MIME_TYPE);
      expect(await page.locator('.file-card').count()).toBe(0);
      await page.screenshot({ path: `${SCREENSHOTS}/refused-upload.png`, fullPage: true });
      await page.getByRole('button', { name: 'Dismiss' }).click();
      expect(await problems.count()).toBe(0);
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('stops an answer mid-stream and shows it as stopped, also after a reload', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      const chatId = await signIn(page, app.url, 'mae');
      await page.getByLabel('Message').fill('Tell me a long story, slowly.');
      await page.getByRole('button', { name: 'Send' }).click();
      // Focus goes back to the message box, ready for the next message.
      expect(await page.evaluate(FOCUSED_NAME)).toBe('Message');

      await page.getByText('Once upon a time', { exact: false }).waitFor({ timeout: 60_000 });
      await page.getByRole('button', { name: 'Stop' }).click();
      const marker = page.locator('.interrupted', { hasText: 'Stopped before the answer was finished.' });
      await marker.waitFor();
      await page.getByRole('button', { name: 'Send' }).waitFor();
      await expect.poll(() => page.getByRole('status').textContent()).toBe('Stopped before the answer was finished.');
      const shown = (await page.locator('.mordn-assistant .mordn-text').textContent()) ?? '';
      expect(shown.length).toBeLessThan(STORY.join('').length);

      // Mordn stored the answer as stopped; the reloaded history carries the same marker.
      await expect
        .poll(async () => {
          const history = await readJson(await mordn.agentFetch('mae', `/v1/chats/${chatId}`));
          return history.messages?.at(-1)?.metadata?.mordn?.interrupted?.reason;
        })
        .toBe('stop');
      await page.reload();
      await page.getByText('Once upon a time', { exact: false }).waitFor();
      await marker.waitFor();
      await page.screenshot({ path: `${SCREENSHOTS}/stopped-answer.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows an answer that a reload interrupted finishing, with its file card, as a reader that never left saw it', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      const chatId = await signIn(page, app.url, 'rey');
      await page.getByLabel('Message').fill('Reload-proof report, please.');
      await page.getByRole('button', { name: 'Send' }).click();
      await toolRow(page, 'Running code', 'running')
        .waitFor({ timeout: 90_000 })
        .catch((error: Error) => {
          throw new Error(`${error.message}\n\n${diagnostics()}`);
        });
      // A reader that never leaves: another tab's resume, through the API, to the answer's end.
      const steady = mordn.agentFetch('rey', `/v1/chat/${chatId}/stream`).then(async (response) => {
        expect(response.status).toBe(200);
        return assembleWithSdk(await readUiChunks(response));
      });
      await page.reload();
      const reportLink = fileCard(page, 'report.csv').getByRole('link', { name: 'Download' });
      await reportLink.waitFor({ timeout: 60_000 }).catch((error: Error) => {
        throw new Error(`${error.message}\n\n${diagnostics()}`);
      });
      await page.getByText('Your report is ready.').waitFor();
      await toolRow(page, 'Running code', 'done').waitFor();
      const download = await fetch((await reportLink.getAttribute('href')) as string);
      expect(download.status).toBe(200);
      expect(await download.text()).toBe(REPORT);
      expect(await page.locator('.interrupted').count()).toBe(0);

      const seen = await steady;
      const history = await readJson(await mordn.agentFetch('rey', `/v1/chats/${chatId}`));
      const stored = history.messages.at(-1);
      expect(stored.metadata?.mordn?.interrupted).toBeUndefined();
      expect(stored.id).toBe(seen?.id);
      expect(gist(stored)).toEqual(gist(seen));
      expect(gist(stored).map((part: Json) => part.file ?? part.tool ?? part.text)).toEqual([
        'sandbox_exec',
        'sandbox_publish_file',
        'report.csv',
        'Your report is ready.',
      ]);
      await page.screenshot({ path: `${SCREENSHOTS}/resumed-answer.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows tool calls in plain words while running, once done and when failed', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await signIn(page, app.url, 'kit');
      await page.getByLabel('Message').fill('Run some code, please.');
      await page.getByRole('button', { name: 'Send' }).click();

      await toolRow(page, 'Running code', 'running')
        .waitFor({ timeout: 90_000 })
        .catch((error: Error) => {
          throw new Error(`${error.message}\n\n${diagnostics()}`);
        });
      expect(await page.getByRole('button', { name: 'Stop', exact: true }).isVisible()).toBe(true);
      await page.screenshot({ path: `${SCREENSHOTS}/tool-running.png`, fullPage: true });
      await toolRow(page, 'Running code', 'done').waitFor({ timeout: 30_000 });
      await toolRow(page, 'Reading a file', 'failed').waitFor({ timeout: 30_000 });
      await page.getByText('Ran it.').waitFor();
      expect(await page.locator('.mordn-tool').allTextContents()).toEqual([
        'Running codedone',
        expect.stringMatching(/^Reading a filefailed./),
      ]);
      expect(await page.locator('.mordn-messages').textContent()).not.toContain('sandbox_');
      await expect.poll(() => page.getByRole('status').textContent()).toBe('The answer is complete.');
      await page.screenshot({ path: `${SCREENSHOTS}/tool-done.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("shows a command's output as it runs, with a Stop beside it, then collapses it to the result", async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await signIn(page, app.url, 'liv');
      await page.getByLabel('Message').fill('Count slowly, please.');
      await page.getByRole('button', { name: 'Send' }).click();

      const output = page.getByRole('log', { name: 'Command output' });
      await output
        .getByText('line-2')
        .waitFor({ timeout: 90_000 })
        .catch((error: Error) => {
          throw new Error(`${error.message}\n\n${diagnostics()}`);
        });
      // Lines keep coming while the command still runs.
      expect(await toolRow(page, 'Running code', 'running').count()).toBe(1);
      const early = (await output.textContent()) ?? '';
      expect(early).not.toContain('line-6');
      await output.getByText('line-4').waitFor();
      expect(await toolRow(page, 'Running code', 'running').count()).toBe(1);
      expect(await page.getByRole('button', { name: 'Stop running code' }).isVisible()).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      await page.screenshot({ path: `${SCREENSHOTS}/live-output.png`, fullPage: true });
      // The command's last line (on stderr) may come with its result, when the box gives way at once.

      // Done: the live output gives way to the finished call.
      await toolRow(page, 'Running code', 'done').waitFor({ timeout: 30_000 });
      await page.getByText('Counted.').waitFor();
      expect(await output.count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Stop running code' }).count()).toBe(0);
      expect(await page.locator('.mordn-tool').allTextContents()).toEqual(['Running codedone']);
      await page.screenshot({ path: `${SCREENSHOTS}/live-output-done.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('passes axe-core without serious violations and works from the keyboard alone', async () => {
    const page = await browser.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    try {
      await page.goto(app.url);
      expect(await seriousViolations(page)).toEqual([]);

      await signIn(page, app.url, 'axel');
      const picker = page.getByLabel('Attach files');
      await expect.poll(() => picker.getAttribute('accept')).toContain('text/csv');
      await picker.setInputFiles({ name: 'sales.csv', mimeType: 'text/csv', buffer: Buffer.from(SALES) });
      await fileCard(page, 'sales.csv').getByRole('link', { name: 'Download' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Tab from the top of the page reaches the pending card, the picker and the message box, in that order.
      await page.locator('body').focus();
      const reached: string[] = [];
      for (let step = 0; step < 12 && reached.at(-1) !== 'Message'; step += 1) {
        await page.keyboard.press('Tab');
        reached.push((await page.evaluate(FOCUSED_NAME)) as string);
      }
      expect(reached).toEqual(expect.arrayContaining(['Download', 'Remove sales.csv', 'Attach files', 'Message']));
      expect(reached.indexOf('Attach files')).toBeLessThan(reached.indexOf('Message'));

      // Typed and sent with Enter; the answer's tool rows and cards pass axe too.
      await page.keyboard.type('Run some code, please.');
      await page.keyboard.press('Enter');
      await page.getByText('Ran it.').waitFor({ timeout: 90_000 });
      await fileCard(page, 'sales.csv').waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await page.screenshot({ path: `${SCREENSHOTS}/chat.png`, fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
