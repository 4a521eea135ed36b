import { execFile } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/package-root.js';

/** A documentation page (README.md or docs/*.md) as committed, by its path from the repository root. */
export function readPage(page: string): string {
  return readFileSync(path.join(packageRoot(), page), 'utf8');
}

/** A source file of the repository, by its path from the repository root (to hold docs to the code). */
export function readSource(file: string): string {
  return readFileSync(path.join(packageRoot(), file), 'utf8');
}

/** The README as committed. */
export function readme(): string {
  return readPage('README.md');
}

/** Every documentation page: README.md, then each docs/*.md by name. */
export function documentationPages(): string[] {
  const docs = readdirSync(path.join(packageRoot(), 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort();
  return ['README.md', ...docs.map((name) => `docs/${name}`)];
}

/** The README's section that maps the docs: a table linking every docs/*.md page, in reading order. */
export const DOCS_MAP_HEADING = '## Documentation';

/** The docs/*.md pages the README's map links to, in the order it lists them (each once). */
export function mapPages(): string[] {
  const pages = relativeLinks(section(readme(), DOCS_MAP_HEADING))
    .map((link) => link.target.split('#')[0] as string)
    .filter((target) => /^docs\/[^/]+\.md$/.test(target));
  return [...new Set(pages)];
}

/**
 * The order a reader meets the pages in, and so the order their shell blocks run in: the README
 * first, then the pages in the order the README's map lists them.
 */
export function readingOrder(): string[] {
  return ['README.md', ...mapPages()];
}

/**
 * Markdown with its fenced code blocks and inline code spans blanked out (line breaks kept), so
 * that a `[x](y)` or a `# comment` inside code is neither a link nor a heading.
 */
export function withoutCode(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      if (fenced) return '';
      return line.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length));
    })
    .join('\n');
}

/** A link of a page that points into the repository (not to another site), with its line number. */
export interface RelativeLink {
  target: string;
  line: number;
}

/** The inline links and images of a page whose target has no scheme (`docs/x.md#y`, `#y`, `../z`). */
export function relativeLinks(markdown: string): RelativeLink[] {
  const links: RelativeLink[] = [];
  withoutCode(markdown)
    .split('\n')
    .forEach((text, index) => {
      for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = match[1] as string;
        if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ target, line: index + 1 });
      }
    });
  return links;
}

/**
 * The anchor GitHub gives a heading: its text without inline markup, lower-cased, with every
 * character that is not a letter, digit, mark, `_`, `-` or space removed and spaces made `-`
 * (as github-slugger does).
 */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings, a repeated one numbered as GitHub does (`x`, `x-1`, `x-2`). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * The text of one section: from its heading line (`## Admin walkthrough`) to the next heading of
 * the same or a higher level. Fails loudly when the heading is gone, so a renamed section cannot
 * make a contract test pass vacuously.
 */
export function section(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`No section "${heading}" in the page.`);
  let fenced = false;
  let end = lines.length;
  for (let index = start + 1; index < lines.length; index += 1) {
    const line = lines[index] as string;
    // A `# comment` inside a shell block is not a heading.
    if (line.startsWith('```')) fenced = !fenced;
    const depth = fenced ? undefined : /^(#+) /.exec(line)?.[1]?.length;
    if (depth !== undefined && depth <= level) {
      end = index;
      break;
    }
  }
  return lines.slice(start, end).join('\n');
}

/** The contents of the section's ```sh blocks, in order. */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string);
}

/** A ```sh block of a page, with the page's path and the block's first line (how tests name it). */
export interface PageShellBlock {
  page: string;
  firstLine: string;
  text: string;
}

/** Every ```sh block of the pages, page by page in the order given, each page's in its own order. */
export function pageShellBlocks(pages: readonly string[]): PageShellBlock[] {
  return pages.flatMap((page) =>
    shellBlocks(readPage(page)).map((text) => ({ page, firstLine: text.split('\n')[0] as string, text })),
  );
}

/** Text with every parenthesised remark removed (innermost first, so nested links go too). */
function withoutRemarks(text: string): string {
  let current = text;
  for (;;) {
    const next = current.replace(/\([^()]*\)/g, '');
    if (next === current) return current;
    current = next;
  }
}

/** The `UPPER_SNAKE` codes named in backticks, ignoring those inside parenthesised remarks. */
export function namedCodes(text: string): string[] {
  return [...withoutRemarks(text).matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`/g)].map((match) => match[1] as string);
}

/**
 * The error table (`| status | codes |`) of a page, as code → status. A code listed twice, or a
 * row that is not a status, fails.
 */
export function errorTable(markdown: string): Map<string, number> {
  const lines = markdown.split('\n');
  const header = lines.indexOf('| status | codes |');
  if (header < 0) throw new Error('The page has no "| status | codes |" table.');
  const table = new Map<string, number>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [, status, codes] = /^\| (\d{3}) \| (.*) \|$/.exec(line) ?? [];
    if (!status || codes === undefined) throw new Error(`Not an error table row: ${line}`);
    for (const code of namedCodes(codes)) {
      if (table.has(code)) throw new Error(`${code} is listed twice in the error table.`);
      table.set(code, Number(status));
    }
  }
  return table;
}

/** The string literals of a TypeScript union type alias (`export type Name = | 'A' | 'B';`) in a source file. */
export function unionMembers(sourceFile: string, typeName: string): string[] {
  const source = readFileSync(path.join(packageRoot(), sourceFile), 'utf8');
  const declaration = new RegExp(`export type ${typeName} =([^;]*);`).exec(source)?.[1];
  if (declaration === undefined) throw new Error(`${sourceFile} declares no union ${typeName}.`);
  return [...declaration.matchAll(/'([A-Z_]+)'/g)].map((match) => match[1] as string);
}

/** Whether a command is on the PATH. */
export function hasCommand(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((directory) => {
    try {
      accessSync(path.join(directory, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The body rows of every table in the markdown, as their cells (trimmed; `\|` inside a cell
 * is a pipe, not a border). Header and separator rows are left out.
 */
export function tableRows(markdown: string): string[][] {
  const rows: string[][] = [];
  const lines = markdown.split('\n');
  lines.forEach((line, index) => {
    if (!line.startsWith('|') || /^\|[\s|:-]+\|$/.test(line)) return;
    // A header is the row right above a separator.
    if (/^\|[\s|:-]+\|$/.test(lines[index + 1] ?? '')) return;
    const cells = line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim().replaceAll('\\|', '|'));
    rows.push(cells);
  });
  return rows;
}

/** The names in backticks in a table cell (`` `PORT`, `HOST` `` → PORT, HOST). */
export function backtickedNames(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string);
}

/**
 * Runs a bash script (with `pipefail` and `-eu`) and collects its output; it must exit 0. It runs
 * in `cwd` (default: the test process's) with only PATH, HOME and `environment` set.
 */
export function runBash(
  script: string,
  environment: Record<string, string>,
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  const { timeoutMs = 60_000, cwd } = options;
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...environment },
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
        ...(cwd === undefined ? {} : { cwd }),
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`bash failed (${error.message}):\n${stdout}\n${stderr}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}
