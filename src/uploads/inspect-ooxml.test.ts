import { copyFile, stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFixtureDirectory,
  type FixtureDirectory,
  forgeDeclaredSize,
  officeEntries,
  patchBytes,
  RELATIONSHIP_TYPES,
  writeZip,
  type ZipContent,
} from '../../test/support/upload-samples.js';
import { inspectFile, type ZipLimits } from './inspect.js';
import type { Inspection } from './inspection.js';
import { DOCX, PPTX, XLSX } from './media-types.js';

const MiB = 1024 * 1024;
const MACRO_DOCX = 'application/vnd.ms-word.document.macroEnabled.12';

let fixtures: FixtureDirectory;

beforeAll(async () => {
  fixtures = await createFixtureDirectory();
});

afterAll(async () => {
  await fixtures.remove();
});

async function zipFile(filename: string, entries: Iterable<[string, ZipContent]>): Promise<string> {
  return writeZip(`${fixtures.path}/${filename}`, entries);
}

async function inspectPath(filePath: string, limits?: Partial<ZipLimits>): Promise<Inspection> {
  const filename = filePath.split('/').pop() ?? '';
  return inspectFile(filePath, { filename, size: (await stat(filePath)).size, limits });
}

/** Inspects and reports how long it took and how much the resident set grew meanwhile. */
async function measured(filePath: string, limits?: Partial<ZipLimits>) {
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const inspection = await inspectPath(filePath, limits);
  return {
    inspection,
    milliseconds: performance.now() - started,
    rssGrowth: process.memoryUsage().rss - rssBefore,
  };
}

describe('Office documents: main part', () => {
  it.each([
    ['application/vnd.ms-excel.sheet.macroEnabled.main+xml', 'application/vnd.ms-excel.sheet.macroEnabled.12'],
    ['application/vnd.ms-word.document.macroEnabled.main+xml', MACRO_DOCX],
    [
      'application/vnd.ms-word.template.macroEnabledTemplate.main+xml',
      'application/vnd.ms-word.template.macroEnabled.12',
    ],
    [
      'application/vnd.ms-excel.sheet.binary.macroEnabled.main',
      'application/vnd.ms-excel.sheet.binary.macroEnabled.12',
    ],
    [
      'application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml',
      'application/vnd.ms-powerpoint.presentation.macroEnabled.12',
    ],
  ])('refuses a macro-enabled main part (%s) whatever the name says', async (mainContentType, detectedType) => {
    const filePath = await zipFile('budget.xlsx', officeEntries('xlsx', { mainContentType }));
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType,
      reason: 'Macro-enabled Office documents are not accepted',
    });
  });

  it.each([
    [
      'application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.template',
    ],
    [
      'application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml',
      'application/vnd.openxmlformats-officedocument.presentationml.slideshow',
    ],
    ['application/vnd.example.notebook.main+xml', 'application/vnd.example.notebook'],
  ])('refuses other Office kinds (%s)', async (mainContentType, detectedType) => {
    const filePath = await zipFile('other.docx', officeEntries('docx', { mainContentType }));
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType,
      reason: 'Only Word documents, Excel workbooks and PowerPoint presentations (.docx, .xlsx, .pptx) are accepted',
    });
  });

  it('never echoes a content type that is not a plain MIME type', async () => {
    const mainContentType = `application/<script>${'x'.repeat(300)}.main+xml`;
    const filePath = await zipFile('odd.docx', officeEntries('docx', { mainContentType }));
    expect(await inspectPath(filePath)).toMatchObject({ accepted: false, detectedType: 'application/zip' });
  });

  it('refuses a package without [Content_Types].xml as a plain archive', async () => {
    const filePath = await zipFile('bare.docx', officeEntries('docx', { omit: ['[Content_Types].xml'] }));
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'This is a ZIP archive, not an Office document; archives are not accepted',
    });
  });

  it('refuses a package whose _rels/.rels is missing or points elsewhere', async () => {
    const missing = await zipFile('norels.docx', officeEntries('docx', { omit: ['_rels/.rels'] }));
    const reason = 'The document has no main part, or its package relationships do not point to it';
    expect(await inspectPath(missing)).toEqual({ accepted: false, detectedType: DOCX, reason });
    const dangling = await zipFile('dangling.docx', officeEntries('docx', { omit: ['word/document.xml'] }));
    expect(await inspectPath(dangling)).toEqual({ accepted: false, detectedType: DOCX, reason });
  });

  it('refuses unreadable content types and any DTD', async () => {
    const broken = officeEntries('docx').map(([name, content]): [string, ZipContent] =>
      name === '[Content_Types].xml' ? [name, '<Types><Default Extension="xml"'] : [name, content],
    );
    expect(await inspectPath(await zipFile('broken.docx', broken))).toMatchObject({
      accepted: false,
      reason: "The document's content types cannot be read",
    });
    const withDtd = officeEntries('docx').map(([name, content]): [string, ZipContent] =>
      name === '_rels/.rels'
        ? [name, `<!DOCTYPE r [<!ENTITY x "y">]>${String(content).replace(/^<\?xml[^>]*>\n/, '')}`]
        : [name, content],
    );
    expect(await inspectPath(await zipFile('dtd.docx', withDtd))).toMatchObject({
      accepted: false,
      reason: "The document's relationships contain a DTD",
    });
  });
});

describe('Office documents: active content', () => {
  it.each([
    ['a VBA project by name', { parts: { 'word/vbaProject.bin': 'VBA' } }],
    ['a VBA project in any folder, any case', { parts: { 'customXml/VBAPROJECT.BIN': 'VBA' } }],
    ['a VBA content type', { defaults: [['bin', 'application/vnd.ms-office.vbaProject']] as [string, string][] }],
  ])('refuses %s as a macro-enabled document', async (_, variant) => {
    const filePath = await zipFile('macro.docx', officeEntries('docx', variant));
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: MACRO_DOCX,
      reason: 'The document contains macros',
    });
  });

  it('refuses ActiveX controls', async () => {
    const filePath = await zipFile(
      'activex.docx',
      officeEntries('docx', {
        parts: { 'word/activeX/activeX1.xml': '<ax:ocx xmlns:ax="urn:x"/>' },
        overrides: [['/word/activeX/activeX1.xml', 'application/vnd.ms-office.activeX+xml']],
      }),
    );
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: DOCX,
      reason: 'The document contains ActiveX controls',
    });
  });

  it('refuses embedded OLE objects', async () => {
    const filePath = await zipFile(
      'ole.pptx',
      officeEntries('pptx', {
        parts: { 'ppt/embeddings/oleObject1.bin': Buffer.from([0xd0, 0xcf, 0x11, 0xe0]) },
        defaults: [['bin', 'application/vnd.openxmlformats-officedocument.oleObject']],
      }),
    );
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: PPTX,
      reason: 'The document contains embedded OLE objects',
    });
  });

  it('refuses an external attachedTemplate but accepts an external hyperlink', async () => {
    const template = await zipFile(
      'template.docx',
      officeEntries('docx', {
        relationships: [
          { type: RELATIONSHIP_TYPES.attachedTemplate, target: 'https://example.test/t.dotm', external: true },
        ],
      }),
    );
    expect(await inspectPath(template)).toEqual({
      accepted: false,
      detectedType: DOCX,
      reason: 'The document loads external content (attachedTemplate); only hyperlinks may point outside it',
    });
    const odd = await zipFile(
      'odd-link.docx',
      officeEntries('docx', {
        relationships: [{ type: 'urn:x/<b>oops</b>', target: 'https://example.test/', external: true }],
      }),
    );
    expect(await inspectPath(odd)).toMatchObject({
      reason: 'The document loads external content (resource); only hyperlinks may point outside it',
    });
    const hyperlink = await zipFile(
      'link.xlsx',
      officeEntries('xlsx', {
        relationships: [{ type: RELATIONSHIP_TYPES.hyperlink, target: 'https://example.test/', external: true }],
      }),
    );
    expect(await inspectPath(hyperlink)).toEqual({ accepted: true, mediaType: XLSX });
  });
});

describe('Office documents: ZIP structure', () => {
  const placeholder = Buffer.from('zz/evil.xml');

  it.each([
    ['a parent segment', '../evil.xml'],
    ['a backslash', 'zz\\evil.xml'],
    ['an absolute path', '/zzevil.xml'],
  ])('refuses an entry name with %s', async (_, forged) => {
    const filePath = await zipFile('names.docx', officeEntries('docx', { parts: { 'zz/evil.xml': '<x/>' } }));
    await patchBytes(filePath, placeholder, Buffer.from(forged));
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'The ZIP structure of the file is damaged or unsafe',
    });
  });

  it('refuses an entry whose local name differs from the central directory', async () => {
    const filePath = await zipFile('twofaced.docx', officeEntries('docx', { parts: { 'zz/evil.xml': '<x/>' } }));
    await patchBytes(filePath, placeholder, Buffer.from('zz/good.xml'), true);
    expect(await inspectPath(filePath)).toMatchObject({
      accepted: false,
      reason: 'The document has inconsistent part names',
    });
  });

  it('refuses the same part twice', async () => {
    const entries = officeEntries('docx');
    const filePath = await zipFile('twice.docx', [...entries, ['WORD/document.xml', '<w:document/>']]);
    expect(await inspectPath(filePath)).toMatchObject({
      accepted: false,
      reason: 'The document contains the same part twice',
    });
  });

  it('refuses more entries than allowed', async () => {
    const many = Array.from({ length: 2001 }, (_, index): [string, ZipContent] => [`word/media/p${index}.txt`, 'x']);
    const filePath = await zipFile('many.docx', [...officeEntries('docx'), ...many]);
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'The document has more than 2000 parts',
    });
    expect(await inspectPath(await zipFile('few.docx', officeEntries('docx')), { maxEntries: 2 })).toMatchObject({
      accepted: false,
      reason: 'The document has more than 2 parts',
    });
  });

  it('refuses a parsed part over maxXmlPartBytes', async () => {
    const filePath = await zipFile('big-rels.docx', officeEntries('docx'));
    expect(await inspectPath(filePath, { maxXmlPartBytes: 256 })).toMatchObject({
      accepted: false,
      reason: 'A part of the document that must be read is over 256 bytes',
    });
  });
});

describe('Office documents: decompression bombs', () => {
  let bombSource: Promise<string> | undefined;

  /** A copy of one docx carrying 200 MiB of zeros (about 200 KiB compressed), built once. */
  async function zeroBomb(filename: string): Promise<string> {
    bombSource ??= zipFile('bomb-source.docx', [
      ...officeEntries('docx'),
      ['word/media/zeros.bin', { zeros: 200 * MiB }],
    ]);
    const filePath = `${fixtures.path}/${filename}`;
    await copyFile(await bombSource, filePath);
    return filePath;
  }

  it('refuses one part of 200 MiB of zeros quickly and in bounded memory', async () => {
    const filePath = await zeroBomb('bomb.docx');
    const { inspection, milliseconds, rssGrowth } = await measured(filePath);
    expect(inspection).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'A part of the document unpacks to more than 32 MiB',
    });
    expect(milliseconds).toBeLessThan(2000);
    expect(rssGrowth).toBeLessThan(64 * MiB);
  });

  it('refuses the same bomb when it declares a small size, counting while streaming', async () => {
    const filePath = await zeroBomb('liar.docx');
    await forgeDeclaredSize(filePath, 'word/media/zeros.bin', 1000);
    const { inspection, milliseconds, rssGrowth } = await measured(filePath);
    expect(inspection).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'The ZIP structure of the file is damaged or unsafe',
    });
    expect(milliseconds).toBeLessThan(2000);
    expect(rssGrowth).toBeLessThan(64 * MiB);
  });

  it('refuses a part that inflates more than 100 times', async () => {
    const filePath = await zipFile('ratio.docx', [
      ...officeEntries('docx'),
      ['word/media/zeros.bin', { zeros: 4 * MiB }],
    ]);
    expect(await inspectPath(filePath)).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'The document unpacks to more than 100 times its compressed size',
    });
  });

  it('refuses many small parts that together inflate too much', async () => {
    const parts = Array.from({ length: 200 }, (_, index): [string, ZipContent] => [
      `word/media/z${index}.bin`,
      { zeros: 1_000_000 },
    ]);
    const filePath = await zipFile('spread.docx', [...officeEntries('docx'), ...parts]);
    const { inspection, milliseconds, rssGrowth } = await measured(filePath);
    expect(inspection).toEqual({
      accepted: false,
      detectedType: 'application/zip',
      reason: 'The document unpacks to more than 100 times its compressed size',
    });
    expect(milliseconds).toBeLessThan(2000);
    expect(rssGrowth).toBeLessThan(64 * MiB);
    expect(await inspectPath(filePath, { maxRatio: 1_000_000, maxTotalInflatedBytes: 8 * MiB })).toMatchObject({
      accepted: false,
      reason: 'The document unpacks to more than 8 MiB',
    });
  });
});
