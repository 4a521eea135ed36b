import { readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import { createReactConsumerApp } from './support/react-consumer-app.js';
import { runCommand } from './support/run-command.js';

/**
 * The component's own JavaScript, gzipped, must stay under this (React and the AI SDK excluded).
 * 9 KiB, not 8: resumable answers (resume after history, re-attaching with backoff, Stop on the server) cost ~0.8 KiB.
 * 10 KiB, not 9: a running command's live output (its last lines, stderr apart, a Stop beside it,
 * sparing announcements) costs ~0.8 KiB.
 * 11 KiB, not 10: the usage-limit message with its local reset time (11,066 B measured with it).
 */
const COMPONENT_BUDGET_BYTES = 11 * 1024;
const ORIGIN = 'http://consumer.test';
const PUBLISH_FIRST =
  'Managed sandboxes are not available for this agent: turn on "Enable sandboxes" and publish the agent first.';

let appDir: string;

beforeAll(async () => {
  appDir = await createReactConsumerApp(path.join(inject('exampleDir'), 'vendor', 'mordn.tgz'));
  await runCommand(path.join(appDir, 'node_modules', '.bin', 'vite'), ['build'], { cwd: appDir });
}, 180_000);

afterAll(async () => {
  if (appDir) await rm(appDir, { recursive: true, force: true });
});

async function assets(extension: string): Promise<string[]> {
  const directory = path.join(appDir, 'dist', 'assets');
  const names = (await readdir(directory)).filter((name) => name.endsWith(extension));
  return Promise.all(names.map((name) => readFile(path.join(directory, name), 'utf8')));
}

/** Every selector of a stylesheet, keyframe steps and at-rules left out. */
function selectorsOf(css: string): string[] {
  const withoutKeyframes = css.replace(/@keyframes[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}/g, '');
  return [...withoutKeyframes.matchAll(/([^{};]+)\{/g)]
    .map((match) => (match[1] ?? '').trim())
    .filter((selector) => !selector.startsWith('@'))
    .flatMap((selector) => selector.split(','))
    .map((selector) => selector.trim());
}

describe('mordn/react in a fresh Vite React app', () => {
  it('builds with React 18, without server code, with styles that stay under .mordn-chat', async () => {
    const react = JSON.parse(await readFile(path.join(appDir, 'node_modules', 'react', 'package.json'), 'utf8'));
    expect(react.version).toMatch(/^18\./);

    const scripts = (await assets('.js')).join('\n');
    expect(scripts).toContain('mordn-chat');
    // Tree-shaken to the browser component: none of the server's modules came along.
    for (const serverOnly of ['better-sqlite3', 'kysely', 'createMordnHandler', 'node:fs']) {
      expect(scripts).not.toContain(serverOnly);
    }

    const styles = (await assets('.css')).join('\n');
    const selectors = selectorsOf(styles);
    expect(selectors.length).toBeGreaterThan(20);
    expect(selectors.filter((selector) => !selector.startsWith('.mordn-chat'))).toEqual([]);
  });

  it(`keeps the component's own JavaScript under ${COMPONENT_BUDGET_BYTES / 1024} KB gzipped`, async () => {
    const directory = path.join(appDir, 'node_modules', 'mordn', 'dist', 'src', 'react');
    const files = (await readdir(directory)).filter((name) => name.endsWith('.js'));
    const sources = await Promise.all(files.map((name) => readFile(path.join(directory, name))));
    const gzipped = gzipSync(Buffer.concat(sources)).length;
    expect(gzipped).toBeLessThan(COMPONENT_BUDGET_BYTES);
    // Nothing in it needs Node.
    expect(Buffer.concat(sources).toString()).not.toMatch(/from ['"]node:/);
  });

  const unavailable = browserUnavailableReason();
  it.skipIf(unavailable !== undefined)(
    'renders in Chromium and shows the publish-first guidance on a 503',
    async () => {
      let browser: Browser | undefined;
      try {
        browser = await launchChromium();
        const page = await browser.newPage();
        const pageErrors: string[] = [];
        page.on('pageerror', (error) => pageErrors.push(error.message));
        await page.route(`${ORIGIN}/**`, async (route) => {
          const url = new URL(route.request().url());
          if (url.pathname === '/api/chat' && url.searchParams.has('bootstrap')) {
            return route.fulfill({
              json: {
                features: { attachments: { enabled: true, accept: ['image/png', 'application/pdf'], maxBytes: 1024 } },
              },
            });
          }
          if (url.pathname === '/api/chat' && route.request().method() === 'POST') {
            return route.fulfill({
              status: 503,
              contentType: 'application/problem+json',
              body: JSON.stringify({ status: 503, code: 'MANAGED_SANDBOX_UNAVAILABLE', detail: PUBLISH_FIRST }),
            });
          }
          const file = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
          return route.fulfill({ path: path.join(appDir, 'dist', file) });
        });

        await page.goto(`${ORIGIN}/`);
        await page.getByText('Attach images, PDF up to 1.0 KB each.').waitFor();
        expect(await page.getByLabel('Attach files').getAttribute('accept')).toBe('image/png,application/pdf');
        await page.getByLabel('Message').fill('Run it in the sandbox.');
        await page.getByRole('button', { name: 'Send' }).click();
        const guidance = page.locator('.mordn-guidance');
        await guidance.getByText(PUBLISH_FIRST).waitFor();
        expect(await guidance.textContent()).toContain('Sandboxes are not available');
        expect(await page.locator('.mordn-chat').textContent()).not.toContain('MANAGED_SANDBOX_UNAVAILABLE');
        await page.screenshot({ path: 'test-results/nextjs/react-18-guidance.png', fullPage: true });
        expect(pageErrors).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
  );
});

/** One request the chat endpoint of {@link startChatEndpoint} received. */
interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const sse = (chunks: object[]) => chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('');
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' };
const answer = (messageId: string, ...deltas: string[]) => [
  { type: 'start', messageId },
  { type: 'text-start', id: 't' },
  ...deltas.map((delta) => ({ type: 'text-delta', id: 't', delta })),
];
const finished = (messageId: string, ...deltas: string[]) =>
  sse([...answer(messageId, ...deltas), { type: 'text-end', id: 't' }, { type: 'finish' }]);

/**
 * The built app and a scripted Mordn chat endpoint on one loopback origin. A turn's behaviour is
 * chosen by its text: `Take your time.` streams and never ends; `Lose the connection.` and
 * `Finish without me.` stream a little and then drop the connection. Resuming the first fails
 * once (connection refused on the way) and then replays the whole answer; resuming the second
 * finds nothing running (204) and its history has the stored answer. Chat `running` replays a
 * running answer to whoever resumes it.
 */
async function startChatEndpoint(dist: string) {
  const seen: Seen[] = [];
  const aborted: string[] = [];
  const resumes = new Map<string, number>();
  const turns = new Map<string, string>();
  const server: Server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    let body = '';
    for await (const chunk of request) body += chunk;
    if (!url.pathname.startsWith('/api/')) {
      const file = url.pathname === '/' ? 'index.html' : url.pathname.slice(1);
      const type = file.endsWith('.js') ? 'text/javascript' : file.endsWith('.css') ? 'text/css' : 'text/html';
      const content = await readFile(path.join(dist, file)).catch(() => undefined);
      return content ? response.writeHead(200, { 'content-type': type }).end(content) : response.writeHead(404).end();
    }
    seen.push({ method: request.method ?? '', path: `${url.pathname}${url.search}`, headers: request.headers, body });
    const json = (value: unknown) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (url.searchParams.has('bootstrap')) {
      return json({ features: { attachments: { enabled: false, accept: [], maxBytes: 0 } } });
    }
    const action = /^\/api\/chat\/([^/]+)\/(stream|stop)$/.exec(url.pathname);
    const chatId = action ? decodeURIComponent(action[1] ?? '') : (url.searchParams.get('chatId') ?? '');
    if (action?.[2] === 'stop') return response.writeHead(204).end();
    if (action?.[2] === 'stream') {
      const tries = (resumes.get(chatId) ?? 0) + 1;
      resumes.set(chatId, tries);
      if (chatId === 'running') return response.writeHead(200, SSE_HEADERS).end(finished('a-running', 'Carried on.'));
      if (turns.get(chatId) !== 'Lose the connection.') return response.writeHead(204).end();
      // The first replay drops mid-stream (a connection cut before any answer, a browser retries by itself).
      if (tries === 1) {
        response.writeHead(200, SSE_HEADERS);
        response.write(sse(answer('a-drop', 'Part one. ')));
        return setTimeout(() => request.socket.destroy(), 200);
      }
      return response.writeHead(200, SSE_HEADERS).end(finished('a-drop', 'Part one. ', 'Part two.'));
    }
    if (request.method === 'GET') {
      if (chatId === 'running') {
        return json({ messages: [{ id: 'u-running', role: 'user', parts: [{ type: 'text', text: 'Still there?' }] }] });
      }
      // The question is stored as the turn starts; its answer only once it ends.
      if (turns.get(chatId) === 'Lose the connection.') {
        return json({
          messages: [{ id: 'u-drop', role: 'user', parts: [{ type: 'text', text: 'Lose the connection.' }] }],
        });
      }
      if (turns.get(chatId) !== 'Finish without me.') return response.writeHead(404).end();
      const stored = { id: 'a-gone', role: 'assistant', parts: [{ type: 'text', text: 'The stored answer.' }] };
      return json({
        messages: [{ id: 'u-gone', role: 'user', parts: [{ type: 'text', text: 'Finish without me.' }] }, stored],
      });
    }
    // A chat turn.
    const turn = JSON.parse(body) as { id: string; messages: Array<{ parts: Array<{ text?: string }> }> };
    const text = turn.messages.at(-1)?.parts.at(-1)?.text ?? '';
    turns.set(turn.id, text);
    response.writeHead(200, SSE_HEADERS);
    if (text === 'Take your time.') {
      response.on('close', () => aborted.push(turn.id));
      return response.write(sse(answer('a-slow', 'Working on it')));
    }
    response.write(sse(answer(text === 'Lose the connection.' ? 'a-drop' : 'a-gone', 'Part one. ')));
    setTimeout(() => request.socket.destroy(), 200);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    seen,
    aborted,
    /** The chat id useChat made up for the page's first turn. */
    chatId: () => (JSON.parse(seen.find((each) => each.method === 'POST')?.body ?? '{}') as { id?: string }).id ?? '',
    requests: () => seen.map(({ method, path }) => `${method} ${path}`),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

describe.skipIf(browserUnavailableReason() !== undefined)('MordnChat with resumable answers, in Chromium', () => {
  let browser: Browser;
  let endpoint: Awaited<ReturnType<typeof startChatEndpoint>>;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** A fresh page of the app (`?chatId=` when given) against a fresh endpoint; page errors are collected. */
  async function open(chatId?: string) {
    endpoint = await startChatEndpoint(path.join(appDir, 'dist'));
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${endpoint.origin}/${chatId ? `?chatId=${chatId}` : ''}`);
    return { page, pageErrors };
  }
  afterEach(async () => {
    await endpoint?.close();
  });

  async function send(page: Page, text: string) {
    await page.getByLabel('Message').fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  }

  it('asks for a resumable answer on chat turns only, and Stop stops it on the server and here', async () => {
    const { page, pageErrors } = await open();
    await send(page, 'Take your time.');
    await page.getByText('Working on it').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('.mordn-interrupted').getByText('Stopped before the answer was finished.').waitFor();
    await page.getByRole('button', { name: 'Send' }).waitFor();

    const chatId = endpoint.chatId();
    expect(chatId).not.toBe('');
    expect(endpoint.aborted).toEqual([chatId]);
    // No re-attaching after a stop: nothing asks for the stream.
    await page.waitForTimeout(1_000);
    expect(endpoint.requests()).toEqual(['GET /api/chat?bootstrap', 'POST /api/chat', `POST /api/chat/${chatId}/stop`]);
    expect(endpoint.seen.map(({ headers }) => headers['x-chat-resumable'])).toEqual([undefined, '1', undefined]);
    expect(pageErrors).toEqual([]);
  });

  it('re-attaches by itself after the stream drops, saying so while it does', async () => {
    const { page, pageErrors } = await open();
    await send(page, 'Lose the connection.');
    const reconnecting = page.getByText('Reconnecting…', { exact: true });
    await reconnecting.waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);
    await page.getByText('Part one. Part two.').waitFor();
    await reconnecting.waitFor({ state: 'detached' });

    const chatId = endpoint.chatId();
    const stream = `GET /api/chat/${chatId}/stream`;
    const history = `GET /api/chat?chatId=${chatId}`;
    // Each try reads the history first (the answer is not stored yet), then the stream: the first
    // stream is cut on the way; the second, a backoff later, replays the answer.
    expect(endpoint.requests().slice(1)).toEqual(['POST /api/chat', history, stream, history, stream]);
    expect(await page.locator('.mordn-assistant').count()).toBe(1);
    expect(await page.locator('.mordn-problem').count()).toBe(0);
    expect(await page.getByRole('status').textContent()).toBe('The answer is complete.');
    expect(pageErrors).toEqual([]);
  });

  it('shows the stored answer when the dropped answer has finished meanwhile, without replaying it', async () => {
    const { page, pageErrors } = await open();
    await send(page, 'Finish without me.');
    await page.getByText('Reconnecting…', { exact: true }).waitFor();
    await page.getByText('The stored answer.').waitFor();
    await page.getByText('Reconnecting…', { exact: true }).waitFor({ state: 'detached' });
    const chatId = endpoint.chatId();
    expect(endpoint.requests().slice(1)).toEqual(['POST /api/chat', `GET /api/chat?chatId=${chatId}`]);
    expect(await page.locator('.mordn-problem').count()).toBe(0);
    await page.getByRole('button', { name: 'Send' }).waitFor();
    expect(pageErrors).toEqual([]);
  });

  it('loads the history, then carries on with the answer still running', async () => {
    const { page, pageErrors } = await open('running');
    await page.getByText('Carried on.').waitFor();
    expect(await page.getByText('Still there?').isVisible()).toBe(true);
    expect(endpoint.requests().filter((request) => !request.endsWith('?bootstrap'))).toEqual([
      'GET /api/chat?chatId=running',
      'GET /api/chat/running/stream',
    ]);
    expect(pageErrors).toEqual([]);
  });
});
