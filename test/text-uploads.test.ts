import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import { HTML_TAGS } from '../src/uploads/inspect-text.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { startTestService, type TestService } from './support/service.js';
import { upload } from './support/upload.js';

const MANAGED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let service: TestService;
let fixture: AgentFixture;
/** The uploads page's paragraph on text uploads (docs/uploads.md), whitespace collapsed. */
let textUploadsParagraph: string;

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
  fixture = await createAgentFixture(service.database.db, { published: MANAGED });
  const uploadsPage = await readFile(path.join(packageRoot(), 'docs', 'uploads.md'), 'utf8');
  textUploadsParagraph = (/\n- \*\*Text uploads\*\*[\s\S]*?(?=\n- )/.exec(uploadsPage)?.[0] ?? '').replace(/\s+/g, ' ');
});
afterAll(() => service.close());

async function storedRowCount(): Promise<number> {
  return (await service.database.db.selectFrom('stored_files').select('storage_path').execute()).length;
}

/** The elements the uploads page says make a text an HTML document when the text opens with one. */
function documentedHtmlElements(): string[] {
  const list = /a first element (.*?), or a `<!--` that never closes/.exec(textUploadsParagraph)?.[1] ?? '';
  return [...list.matchAll(/`([a-z]+)`/g)].map((match) => match[1] as string);
}

describe('text uploads are checked for markup at their start only, as docs/uploads.md says', () => {
  it('the uploads page says what is checked: the start only, and markup further in is accepted', () => {
    expect(textUploadsParagraph).toContain('Markup is checked for at the **start of the text** only');
    expect(textUploadsParagraph).toContain('within its first 64 KiB');
    expect(textUploadsParagraph).toContain('Everything else is accepted, in every text type');
    // Exactly the elements the inspection checks for, in the order it lists them.
    expect(documentedHtmlElements()).toEqual(HTML_TAGS);
  });

  it('refuses every documented HTML opening, in .txt and .md alike, after whitespace and comments too', async () => {
    const before = await storedRowCount();
    for (const element of documentedHtmlElements()) {
      const openings: Array<[filename: string, opening: string]> = [
        ['page.txt', `<${element}>`],
        ['page.md', ` \n<!-- saved -->\n<${element.toUpperCase()} class="x">`],
      ];
      for (const [filename, opening] of openings) {
        const response = await upload(service, fixture.key, { bytes: `${opening}\nrest of it\n`, filename }, 'reader');
        expect(response.status, `${filename} opening with <${element}>`).toBe(415);
        const problem = await readJson(response);
        expect(problem.code).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(problem.detail).toContain('HTML documents are not accepted');
        expect(problem.detail).toContain('detected text/html');
      }
    }
    expect(await storedRowCount()).toBe(before);
  });

  it.each([
    ['<!doctype html>', 'text/html'],
    ['<!-- a comment that never closes', 'text/html'],
    ['<svg xmlns="http://www.w3.org/2000/svg"/>', 'image/svg+xml'],
    ['<?xml version="1.0"?><note/>', 'application/xml'],
    ['<!doctype note>', 'application/xml'],
    ['#!/bin/sh', 'application/x-sh'],
    ['\uFEFF#!/usr/bin/env python3', 'text/x-python'],
  ])('refuses a text that opens with %j (detected %s)', async (opening, detected) => {
    const response = await upload(service, fixture.key, { bytes: `${opening}\nx\n`, filename: 'notes.txt' }, 'reader');
    expect(response.status).toBe(415);
    expect((await readJson(response)).detail).toContain(`detected ${detected}`);
  });

  it.each([
    [
      'README.md',
      '<p align="center"><img src="logo.png"></p>\n\n# Title\n\n<details><summary>More</summary>x</details>\n',
    ],
    ['notes.md', '# Notes\n\n<script>alert(1)</script>\n<iframe src="https://example.test"></iframe>\n'],
    ['quote.txt', 'The page said:\n<html><body><script>alert(1)</script></body></html>\n'],
    ['cells.csv', 'name,markup\nada,<b>bold</b>\n'],
    ['page.json', '{"html":"<script>alert(1)</script>"}'],
    ['indented.txt', '  #!/bin/sh is how a script starts\n'],
  ])('accepts %s, whose markup is further in, and serves it only as an inert attachment', async (filename, text) => {
    const response = await upload(service, fixture.key, { bytes: text, filename }, 'reader');
    expect(response.status).toBe(201);
    const uploaded = await readJson(response);
    const download = await fetch(uploaded.url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe(uploaded.mediaType);
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(await download.text()).toBe(text);
  });

  it('looks only within the first 64 KiB: an opening pushed past it by whitespace is text', async () => {
    const late = `${' '.repeat(64 * 1024)}<html><body>late</body></html>\n`;
    expect((await upload(service, fixture.key, { bytes: late, filename: 'late.txt' }, 'reader')).status).toBe(201);
    const early = `${' '.repeat(64 * 1024 - 64)}<html><body>early</body></html>\n`;
    expect((await upload(service, fixture.key, { bytes: early, filename: 'early.txt' }, 'reader')).status).toBe(415);
  });
});
