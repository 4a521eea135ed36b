import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { browserUnavailableReason, launchChromium } from './support/browser.js';
import { createReactConsumerApp } from './support/react-consumer-app.js';
import { runCommand } from './support/run-command.js';

/** The component's own JavaScript, gzipped, must stay under this (React and the AI SDK excluded). */
const COMPONENT_BUDGET_BYTES = 8 * 1024;
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
