import { readdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { packageRoot } from '../../../src/package-root.js';
import { runCommand, toolEnvironment } from './run-command.js';

/** The newest modification time of the files under `directory`, 0 when there are none. */
async function newestMtime(directory: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(directory, { withFileTypes: true }).catch(() => [])) {
    const full = path.join(directory, entry.name);
    const mtime = entry.isDirectory() ? await newestMtime(full) : (await stat(full)).mtimeMs;
    newest = Math.max(newest, mtime);
  }
  return newest;
}

/**
 * Builds the console SPA into dist/console with Vite when its index.html is missing or older than
 * the sources it bundles (src/console and the chat component in src/react); answers whether it built.
 */
export async function ensureConsoleBuilt(): Promise<boolean> {
  const root = packageRoot();
  const index = path.join(root, 'dist', 'console', 'index.html');
  const built = await stat(index).then(
    (info) => info.mtimeMs,
    () => 0,
  );
  const sources = Math.max(
    await newestMtime(path.join(root, 'src', 'console')),
    await newestMtime(path.join(root, 'src', 'react')),
  );
  if (built > sources) return false;
  await runCommand(
    path.join(root, 'node_modules', '.bin', 'vite'),
    ['build', '--config', 'src/console/vite.config.ts'],
    {
      cwd: root,
      env: toolEnvironment(),
    },
  );
  return true;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * Every axe-core violation of `url`, whatever its impact, opened in `context` once `ready` (a
 * locator of the loaded page) is visible. `context` must have `bypassCSP`: the console's CSP
 * (`script-src 'self'`) blocks `addScriptTag`. (`page.evaluate(source)` does get past it, but
 * axe would then run under the CSP the real pages are checked against.)
 */
export async function axeViolations(
  context: BrowserContext,
  url: string,
  ready: (page: Page) => Locator,
): Promise<AxeViolation[]> {
  const source = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const page = await context.newPage();
  try {
    await page.goto(url);
    await ready(page).waitFor();
    await page.addScriptTag({ content: source });
    // The test program has no DOM types: the page runs these as plain expressions.
    return (await page.evaluate('axe.run().then((result) => result.violations)')) as AxeViolation[];
  } finally {
    await page.close();
  }
}

/** The serious and critical axe-core violations of `url` (see {@link axeViolations}). */
export async function seriousViolations(
  context: BrowserContext,
  url: string,
  ready: (page: Page) => Locator,
): Promise<AxeViolation[]> {
  const violations = await axeViolations(context, url, ready);
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/** A context for the axe pass only: the CSP is bypassed there, and only there. */
export function axeContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ bypassCSP: true });
}

/** The focused element's accessible name, as far as these tests need it: aria-label, label, or text. */
export const FOCUSED_NAME =
  "(() => { const active = document.activeElement; return active?.getAttribute('aria-label') ?? active?.labels?.[0]?.textContent ?? active?.textContent ?? ''; })()";

/** A key-value table's value cell, by its row header (the status page). */
export function statusValue(page: Page, header: string): Locator {
  return page
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name: header, exact: true }) })
    .getByRole('cell');
}

/** Escapes `text` for a RegExp. */
export function literal(text: string): RegExp {
  return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
}

/**
 * A page expression: for each element matching `selector`, its text as the browser laid it out,
 * one string per line (text-transform aside). A word broken across lines shows as two entries.
 */
export function renderedLines(selector: string): string {
  return `[...document.querySelectorAll(${JSON.stringify(selector)})].map((element) => {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    const lines = [];
    let top;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let index = 0; index < node.data.length; index += 1) {
        const range = document.createRange();
        range.setStart(node, index);
        range.setEnd(node, index + 1);
        const box = range.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue;
        if (top === undefined || box.top > top + box.height / 2) {
          lines.push('');
          top = box.top;
        }
        lines[lines.length - 1] += node.data[index];
      }
    }
    return lines;
  })`;
}

/** Where the console suites leave their screenshots. */
export const CONSOLE_SCREENSHOTS = 'test-results/console';

/**
 * Watches a console page as every console suite does: a 15 s default timeout, uncaught page
 * errors and Content-Security-Policy violations collected into the lists given (each suite
 * asserts them empty).
 */
export function watchConsolePage(page: Page, seen: { pageErrors: string[]; cspViolations: string[] }): void {
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (error) => seen.pageErrors.push(error.message));
  page.on('console', (message) => {
    if (/content[- ]security[- ]policy/i.test(message.text())) seen.cspViolations.push(message.text());
  });
}

/**
 * What a failed step leaves behind: a screenshot of its page (`failed-<prefix><test name>.png`) and
 * the page's text, plus `more` (the service's stderr, say), to see what the SPA showed.
 */
export async function reportFailedStep(page: Page, testName: string, prefix = '', more = ''): Promise<void> {
  const name = testName.replace(/[^a-z0-9]+/gi, '-').slice(0, 40);
  await page
    .screenshot({ path: `${CONSOLE_SCREENSHOTS}/failed-${prefix}${name}.png`, fullPage: true })
    .catch(() => undefined);
  const text =
    (await page
      .locator('body')
      .textContent()
      .catch(() => '')) ?? '';
  console.log(`failed at ${page.url()}:\n${text.slice(0, 3_000)}${more ? `\n\n${more}` : ''}`);
}
