import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureDirectory, type FixtureDirectory } from '../../test/support/upload-samples.js';
import { inspectFile } from './inspect.js';
import type { Inspection } from './inspection.js';

let fixtures: FixtureDirectory;

beforeAll(async () => {
  fixtures = await createFixtureDirectory();
});

afterAll(async () => {
  await fixtures.remove();
});

async function inspectText(filename: string, content: string | Uint8Array): Promise<Inspection> {
  const filePath = await fixtures.write(filename.replaceAll('/', '_'), content);
  return inspectFile(filePath, { filename, size: Buffer.byteLength(content) });
}

const WRONG_NAME = expect.stringContaining('its name does not end in a supported text extension (.txt,');

describe('text: markup and scripts', () => {
  it.each([
    ['<!doctype html><p>x', 'text/html'],
    ['  \n<HTML lang="en"><body>x</body></HTML>', 'text/html'],
    ['<!-- saved page -->\n<head><title>x</title></head>', 'text/html'],
    ['<script>alert(1)</script>', 'text/html'],
    ['<!-- a comment that never ends <html>', 'text/html'],
    ['<iframe src="https://example.test"></iframe>', 'text/html'],
    ['\uFEFF<body onload="x()">', 'text/html'],
    ['<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'image/svg+xml'],
    ['<?xml version="1.0"?>\n<!-- c -->\n<svg:svg xmlns:svg="http://www.w3.org/2000/svg"/>', 'image/svg+xml'],
    ['<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd"><svg/>', 'image/svg+xml'],
    [
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><html xmlns="http://www.w3.org/1999/xhtml"/>',
      'application/xhtml+xml',
    ],
    ['<?xml version="1.0" encoding="UTF-8"?><note><to>you</to></note>', 'application/xml'],
  ])('refuses %j whatever the name (detected %s)', async (content, detectedType) => {
    for (const filename of ['notes.txt', 'x.png', 'page.md']) {
      expect(await inspectText(filename, content)).toMatchObject({ accepted: false, detectedType });
    }
  });

  it('refuses HTML named x.png and SVG named a.svg with the reason', async () => {
    expect(await inspectText('x.png', '<html><body>hi</body></html>')).toEqual({
      accepted: false,
      detectedType: 'text/html',
      reason: 'HTML documents are not accepted',
    });
    expect(await inspectText('a.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>')).toEqual({
      accepted: false,
      detectedType: 'image/svg+xml',
      reason: 'SVG images are not accepted (they can carry scripts)',
    });
  });

  it.each([
    ['#!/bin/sh\nrm -rf /\n', 'application/x-sh'],
    ['#!/usr/bin/env bash\necho hi\n', 'application/x-sh'],
    ['#!/usr/bin/env -S python3 -u\nprint(1)\n', 'text/x-python'],
    ['\uFEFF#!/usr/bin/node\n', 'text/javascript'],
    ['#!/opt/weird/interpreter\n', 'text/x-script'],
    ['#!/usr/bin/constructor\n', 'text/x-script'],
  ])('refuses a shebang script named .txt: %j', async (content, detectedType) => {
    expect(await inspectText('run.txt', content)).toEqual({
      accepted: false,
      detectedType,
      reason: 'Scripts are not accepted',
    });
  });

  it('keeps Markdown that merely contains HTML further down', async () => {
    const markdown = '# Notes\n\n<img src="a.png">\n<script>not at the start</script>\n';
    expect(await inspectText('notes.md', markdown)).toEqual({ accepted: true, mediaType: 'text/markdown' });
    expect(await inspectText('notes.md', '<!-- template -->\n# Title\n')).toEqual({
      accepted: true,
      mediaType: 'text/markdown',
    });
  });
});

describe('text: encoding and names', () => {
  it('refuses invalid UTF-8', async () => {
    expect(await inspectText('latin1.txt', Buffer.from('caf\xe9 cr\xe8me', 'latin1'))).toEqual({
      accepted: false,
      detectedType: 'application/octet-stream',
      reason: 'The file is not a recognised format and is not valid UTF-8 text',
    });
  });

  it('refuses NUL bytes, such as UTF-16 text', async () => {
    expect(await inspectText('wide.txt', Buffer.from('hello', 'utf16le'))).toEqual({
      accepted: false,
      detectedType: 'application/octet-stream',
      reason: 'The file contains NUL bytes, so it is not UTF-8 text',
    });
  });

  it.each([
    ['x.png', 'text/plain'],
    ['README', 'text/plain'],
    ['run.sh', 'application/x-sh'],
    ['page.html', 'text/html'],
    ['a.svg', 'image/svg+xml'],
    ['.txt', 'text/plain'],
    ['x.constructor', 'text/plain'],
    ['x.__proto__', 'text/plain'],
    ['x.toString', 'text/plain'],
  ])('refuses plain text named %s (detected %s)', async (filename, detectedType) => {
    expect(await inspectText(filename, 'just some words')).toEqual({
      accepted: false,
      detectedType,
      reason: WRONG_NAME,
    });
  });

  it.each([
    ['a.TXT', 'text/plain'],
    ['b.text', 'text/plain'],
    ['c.Markdown', 'text/markdown'],
    ['d.tab', 'text/tab-separated-values'],
    ['e.CSV', 'text/csv'],
  ])('takes the type of %s from its extension', async (filename, mediaType) => {
    expect(await inspectText(filename, 'a\tb\n1\t2\n')).toEqual({ accepted: true, mediaType });
  });

  it('refuses text over 10 MiB without reading it', async () => {
    expect(await inspectText('huge.txt', 'a'.repeat(10 * 1024 * 1024 + 1))).toEqual({
      accepted: false,
      detectedType: 'application/octet-stream',
      reason: 'The file is not a recognised format, and text files over 10 MiB are not accepted',
    });
  });

  it('accepts multi-byte UTF-8', async () => {
    expect(await inspectText('intl.txt', 'naïve café — 日本語 🎉')).toEqual({
      accepted: true,
      mediaType: 'text/plain',
    });
  });
});

describe('text: JSON', () => {
  it('refuses JSON that does not parse', async () => {
    expect(await inspectText('bad.json', '{"a": 1,}')).toEqual({
      accepted: false,
      detectedType: 'text/plain',
      reason: 'The file is named .json but is not valid JSON',
    });
  });

  it('accepts 64 levels of nesting and refuses 65', async () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(await inspectText('deep64.json', nested(64))).toEqual({ accepted: true, mediaType: 'application/json' });
    expect(await inspectText('deep65.json', nested(65))).toEqual({
      accepted: false,
      detectedType: 'application/json',
      reason: 'The JSON nests more than 64 levels deep',
    });
    const mixed = `${'{"a":'.repeat(40)}${'['.repeat(25)}${']'.repeat(25)}${'}'.repeat(40)}`;
    expect(await inspectText('mixed.json', mixed)).toMatchObject({ accepted: false, detectedType: 'application/json' });
  });

  it('does not count brackets inside strings', async () => {
    const json = JSON.stringify({ text: `${'['.repeat(500)} and \\" ${'{'.repeat(500)}` });
    expect(await inspectText('strings.json', json)).toEqual({ accepted: true, mediaType: 'application/json' });
  });

  it('stays fast on hostile prologs and sizes', async () => {
    const started = performance.now();
    expect(await inspectText('doctypes.txt', `<?xml version="1.0"?>${'<!doctype a>'.repeat(500_000)}`)).toMatchObject({
      detectedType: 'application/xml',
    });
    expect(await inspectText('spaces.txt', `${' '.repeat(8_000_000)}x`)).toEqual({
      accepted: true,
      mediaType: 'text/plain',
    });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('refuses a hostile depth without overflowing the stack', async () => {
    expect(await inspectText('hostile.json', '['.repeat(1_000_000))).toMatchObject({
      accepted: false,
      reason: 'The JSON nests more than 64 levels deep',
    });
  });
});
