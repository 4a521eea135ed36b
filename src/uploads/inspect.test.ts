import { stat } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compoundFileBytes,
  createFixtureDirectory,
  type FixtureDirectory,
  gifBytes,
  jpegBytes,
  officeEntries,
  pdfBytes,
  pngBytes,
  portableExecutableBytes,
  webpBytes,
  writeZip,
  type ZipContent,
} from '../../test/support/upload-samples.js';
import { inspectFile } from './inspect.js';
import type { Inspection } from './inspection.js';
import { DOCX, PPTX, XLSX } from './media-types.js';

let fixtures: FixtureDirectory;

beforeAll(async () => {
  fixtures = await createFixtureDirectory();
});

afterAll(async () => {
  await fixtures.remove();
});

async function inspectZip(filename: string, entries: Iterable<[string, ZipContent]>): Promise<Inspection> {
  const filePath = await writeZip(`${fixtures.path}/${filename}`, entries);
  return inspectFile(filePath, { filename, size: (await stat(filePath)).size });
}

async function inspectBytes(filename: string, content: string | Uint8Array): Promise<Inspection> {
  const filePath = await fixtures.write(filename, content);
  return inspectFile(filePath, { filename, size: Buffer.byteLength(content) });
}

describe('inspectFile: accepted types', () => {
  it.each([
    ['photo.png', pngBytes(), 'image/png'],
    ['photo.jpg', jpegBytes(), 'image/jpeg'],
    ['anim.gif', gifBytes(), 'image/gif'],
    ['sticker.webp', webpBytes(), 'image/webp'],
    ['paper.pdf', pdfBytes(), 'application/pdf'],
    ['notes.txt', 'Plain notes\nline two\n', 'text/plain'],
    ['server.log', '2024-01-01 started\n', 'text/plain'],
    ['README.md', '# Title\n\n<div align="center">centred</div>\n', 'text/markdown'],
    ['table.csv', 'name,amount\nBMW,3\n', 'text/csv'],
    ['table.tsv', 'name\tamount\nAudi\t4\n', 'text/tab-separated-values'],
    ['data.json', '{"items":[1,2,{"nested":"yes"}]}', 'application/json'],
    ['bom.txt', '\uFEFFstarts with a byte order mark', 'text/plain'],
    ['empty.txt', '', 'text/plain'],
  ])('accepts %s as %s', async (filename, content, mediaType) => {
    expect(await inspectBytes(filename, content)).toEqual({ accepted: true, mediaType });
  });

  it.each([
    ['docx', DOCX],
    ['xlsx', XLSX],
    ['pptx', PPTX],
  ] as const)('accepts a minimal .%s', async (kind, mediaType) => {
    expect(await inspectZip(`minimal.${kind}`, officeEntries(kind))).toEqual({ accepted: true, mediaType });
  });

  it('trusts the signature, not the name: a PNG named photo.jpg is a PNG', async () => {
    expect(await inspectBytes('photo.jpg', pngBytes())).toEqual({ accepted: true, mediaType: 'image/png' });
  });

  it('takes text whose start looks like a short binary signature (BM, MZ, %!) as text', async () => {
    expect(await inspectBytes('cars.csv', 'BMW,2021\nMZ,1990\n')).toEqual({ accepted: true, mediaType: 'text/csv' });
    expect(await inspectBytes('reply.txt', 'MZ says hi')).toEqual({ accepted: true, mediaType: 'text/plain' });
  });
});

describe('inspectFile: refused binaries', () => {
  it('throws only for I/O errors on the file itself', async () => {
    await expect(inspectFile(`${fixtures.path}/missing.bin`, { filename: 'a.txt', size: 3 })).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('refuses a PDF without %%EOF', async () => {
    expect(await inspectBytes('cut.pdf', pdfBytes({ withEndMarker: false }))).toEqual({
      accepted: false,
      detectedType: 'application/pdf',
      reason: 'The PDF is incomplete (it has no end-of-file marker)',
    });
  });

  it('tolerates trailing whitespace after %%EOF but not a bad version header', async () => {
    const padded = Buffer.concat([pdfBytes(), Buffer.from('\r\n\n   \n')]);
    expect(await inspectBytes('padded.pdf', padded)).toEqual({ accepted: true, mediaType: 'application/pdf' });
    const badVersion = Buffer.from(pdfBytes().toString('latin1').replace('%PDF-1.4', '%PDF-9.9'), 'latin1');
    expect(await inspectBytes('future.pdf', badVersion)).toMatchObject({
      accepted: false,
      detectedType: 'application/pdf',
    });
  });

  it('refuses a Windows executable named .pdf', async () => {
    expect(await inspectBytes('invoice.pdf', portableExecutableBytes())).toEqual({
      accepted: false,
      detectedType: 'application/x-msdownload',
      reason: 'Executables and installable packages are not accepted',
    });
  });

  it('refuses an OLE2 compound file named .docx as legacy or encrypted Office', async () => {
    const inspection = await inspectBytes('report.docx', compoundFileBytes());
    expect(inspection).toEqual({
      accepted: false,
      detectedType: 'application/x-cfb',
      reason: 'Legacy Office files (.doc, .xls, .ppt) and password-protected Office files are not supported',
    });
  });

  it('refuses a plain ZIP of arbitrary files as an archive, whatever its name', async () => {
    const entries: [string, string][] = [
      ['a.txt', 'hello'],
      ['folder/b.csv', 'x,y\n'],
    ];
    for (const filename of ['files.zip', 'report.docx']) {
      expect(await inspectZip(filename, entries)).toEqual({
        accepted: false,
        detectedType: 'application/zip',
        reason: 'This is a ZIP archive, not an Office document; archives are not accepted',
      });
    }
  });

  it('refuses other archives', async () => {
    const gzip = Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(await inspectBytes('data.csv', gzip)).toEqual({
      accepted: false,
      detectedType: 'application/gzip',
      reason: 'Archives are not accepted',
    });
  });

  it('refuses unknown binary bytes', async () => {
    expect(await inspectBytes('blob.txt', Buffer.from([0xc3, 0x28, 0x01, 0x02]))).toEqual({
      accepted: false,
      detectedType: 'application/octet-stream',
      reason: 'The file is not a recognised format and is not valid UTF-8 text',
    });
  });

  it('refuses HTML bytes named x.png as HTML', async () => {
    expect(await inspectBytes('x.png', '<!DOCTYPE html><html><body>hi</body></html>')).toEqual({
      accepted: false,
      detectedType: 'text/html',
      reason: 'HTML documents are not accepted',
    });
  });

  it('refuses a GIF whose header is malformed', async () => {
    const broken = Buffer.concat([Buffer.from('GIF89x'), gifBytes().subarray(6)]);
    expect(await inspectBytes('broken.gif', broken)).toEqual({
      accepted: false,
      detectedType: 'image/gif',
      reason: 'The image is malformed',
    });
  });

  it('refuses bytes that only start like a GIF', async () => {
    expect(await inspectBytes('fake.gif', 'GIF is how I pronounce it')).toEqual({
      accepted: false,
      detectedType: 'text/plain',
      reason: expect.stringContaining('does not end in a supported text extension'),
    });
  });
});
