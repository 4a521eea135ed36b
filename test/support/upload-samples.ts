import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, deflateSync } from 'node:zlib';
import yazl from 'yazl';
import { DOCX, PPTX, XLSX } from '../../src/uploads/media-types.js';

// Builders for the sample files the upload inspection tests use: minimal but structurally valid
// images, PDFs and Office packages, and the hostile variants of each. Everything is generated, so
// no binary fixture is committed.

/** A temporary directory for one test file's samples. */
export interface FixtureDirectory {
  path: string;
  /** Writes `content` under `name` and returns the full path. */
  write(name: string, content: string | Uint8Array): Promise<string>;
  remove(): Promise<void>;
}

/** Creates a fresh temporary directory; call `remove()` in `afterAll`. */
export async function createFixtureDirectory(): Promise<FixtureDirectory> {
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-inspect-'));
  return {
    path: directory,
    async write(name, content) {
      const filePath = path.join(directory, name);
      await writeFile(filePath, content);
      return filePath;
    },
    remove: () => rm(directory, { recursive: true, force: true }),
  };
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const checksum = Buffer.alloc(4);
  checksum.writeUInt32BE(crc32(typeAndData));
  return Buffer.concat([length, typeAndData, checksum]);
}

/** A 1×1 RGB PNG with correct CRCs and a deflated scanline. */
export function pngBytes(): Buffer {
  const header = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(Buffer.from([0, 0x33, 0x66, 0xcc]))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A 1×1 grey baseline JPEG: one 8×8 block whose only coefficient is a zero DC difference, coded
 * with one-symbol Huffman tables (`0` for DC category 0, `0` for end-of-block).
 */
export function jpegBytes(): Buffer {
  const segment = (marker: number, body: number[]) => [0xff, marker, 0, body.length + 2, ...body];
  const oneSymbolTable = (tableClass: number) => [tableClass << 4, 1, ...new Array(15).fill(0), 0];
  return Buffer.from([
    0xff,
    0xd8,
    ...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...segment(0xdb, [0, ...new Array(64).fill(1)]),
    ...segment(0xc0, [8, 0, 1, 0, 1, 1, 1, 0x11, 0]),
    ...segment(0xc4, [...oneSymbolTable(0), ...oneSymbolTable(1)]),
    ...segment(0xda, [1, 1, 0, 0, 63, 0]),
    0x3f,
    0xff,
    0xd9,
  ]);
}

/** The classic 43-byte transparent 1×1 GIF89a. */
export function gifBytes(): Buffer {
  return Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
}

/** A 1×1 lossless WebP (RIFF/WEBP/VP8L). */
export function webpBytes(): Buffer {
  return Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
}

/** A one-page PDF with a correct cross-reference table; `withEndMarker: false` drops `%%EOF`. */
export function pdfBytes(options: { withEndMarker?: boolean } = {}): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>',
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n`;
  if (options.withEndMarker !== false) body += '%%EOF\n';
  return Buffer.from(body, 'latin1');
}

/** An OLE2 compound file header, as legacy .doc/.xls and encrypted OOXML files start. */
export function compoundFileBytes(): Buffer {
  const header = Buffer.alloc(512);
  Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(header);
  header.writeUInt16LE(0x3e, 24);
  header.writeUInt16LE(3, 26);
  header.writeUInt16LE(0xfffe, 28);
  header.writeUInt16LE(9, 30);
  return header;
}

/** The start of a Windows PE executable: `MZ`, the DOS stub's `e_lfanew`, and `PE\0\0`. */
export function portableExecutableBytes(): Buffer {
  const bytes = Buffer.alloc(512);
  bytes.write('MZ', 0, 'latin1');
  bytes.writeUInt32LE(0x80, 0x3c);
  bytes.write('PE\0\0', 0x80, 'latin1');
  bytes.writeUInt16LE(0x14c, 0x84);
  return bytes;
}

/** An entry's content: text, bytes, or `zeros` bytes streamed (never held in memory). */
export type ZipContent = string | Uint8Array | { zeros: number };

function zeroStream(total: number): Readable {
  const chunk = Buffer.alloc(64 * 1024);
  let left = total;
  return new Readable({
    read() {
      const size = Math.min(left, chunk.length);
      left -= size;
      this.push(size === 0 ? null : chunk.subarray(0, size));
    },
  });
}

/** Writes a ZIP with yazl, streaming the entries to disk. */
export async function writeZip(filePath: string, entries: Iterable<[string, ZipContent]>): Promise<string> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of entries) {
    if (typeof content === 'string') zip.addBuffer(Buffer.from(content), name);
    else if (content instanceof Uint8Array) zip.addBuffer(Buffer.from(content), name);
    else zip.addReadStream(zeroStream(content.zeros), name, { size: content.zeros });
  }
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(filePath));
  return filePath;
}

/**
 * Rewrites the archive at `filePath` by replacing every occurrence of `from` (or only the first,
 * which is the local header) with `to`, same length: how the tests forge names yazl refuses to
 * write, or sizes that lie.
 */
export async function patchBytes(filePath: string, from: Buffer, to: Buffer, onlyFirst = false): Promise<void> {
  const bytes = await readFile(filePath);
  let index = bytes.indexOf(from);
  while (index !== -1) {
    to.copy(bytes, index);
    if (onlyFirst) break;
    index = bytes.indexOf(from, index + to.length);
  }
  await writeFile(filePath, bytes);
}

/**
 * Sets the uncompressed size that the central directory declares for `name`, leaving the data
 * alone: a bomb that claims to be small.
 */
export async function forgeDeclaredSize(filePath: string, name: string, declaredSize: number): Promise<void> {
  const bytes = await readFile(filePath);
  const signature = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
  for (let at = bytes.indexOf(signature); at !== -1; at = bytes.indexOf(signature, at + 4)) {
    const nameLength = bytes.readUInt16LE(at + 28);
    if (bytes.toString('utf8', at + 46, at + 46 + nameLength) === name) bytes.writeUInt32LE(declaredSize, at + 24);
  }
  await writeFile(filePath, bytes);
}

/** Relationship types the fixtures use (transitional OOXML namespace). */
export const RELATIONSHIP_TYPES = {
  officeDocument: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument',
  hyperlink: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink',
  attachedTemplate: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/attachedTemplate',
  worksheet: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet',
  slide: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide',
} as const;

export interface RelationshipSpec {
  type: string;
  target: string;
  external?: boolean;
}

function relationshipsXml(relationships: RelationshipSpec[]): string {
  const items = relationships.map(
    ({ type, target, external }, index) =>
      `<Relationship Id="rId${index + 1}" Type="${type}" Target="${target}"${external ? ' TargetMode="External"' : ''}/>`,
  );
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${items.join('')}</Relationships>`;
}

function contentTypesXml(defaults: [string, string][], overrides: [string, string][]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n',
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">',
    ...defaults.map(([extension, type]) => `<Default Extension="${extension}" ContentType="${type}"/>`),
    ...overrides.map(([part, type]) => `<Override PartName="${part}" ContentType="${type}"/>`),
    '</Types>',
  ].join('');
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';

interface OfficeKind {
  mainPart: string;
  mainType: string;
  mainXml: string;
  /** Relationships the main part always has (the sheet, the slide). */
  relationships: RelationshipSpec[];
  parts: Record<string, [string, string]>;
}

const OFFICE_KINDS: Record<'docx' | 'xlsx' | 'pptx', OfficeKind> = {
  docx: {
    mainPart: 'word/document.xml',
    mainType: `${DOCX}.main+xml`,
    mainXml: `<w:document xmlns:w="${W}"><w:body><w:p><w:r><w:t>Hello</w:t></w:r></w:p></w:body></w:document>`,
    relationships: [],
    parts: {},
  },
  xlsx: {
    mainPart: 'xl/workbook.xml',
    mainType: `${XLSX}.main+xml`,
    mainXml: `<workbook xmlns="${S}" xmlns:r="${R}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    relationships: [{ type: RELATIONSHIP_TYPES.worksheet, target: 'worksheets/sheet1.xml' }],
    parts: {
      'xl/worksheets/sheet1.xml': [
        `<worksheet xmlns="${S}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Hello</t></is></c></row></sheetData></worksheet>`,
        'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml',
      ],
    },
  },
  pptx: {
    mainPart: 'ppt/presentation.xml',
    mainType: `${PPTX}.main+xml`,
    mainXml: `<p:presentation xmlns:p="${P}" xmlns:r="${R}"><p:sldIdLst><p:sldId id="256" r:id="rId1"/></p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`,
    relationships: [{ type: RELATIONSHIP_TYPES.slide, target: 'slides/slide1.xml' }],
    parts: {
      'ppt/slides/slide1.xml': [
        `<p:sld xmlns:p="${P}" xmlns:a="${A}"><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld></p:sld>`,
        'application/vnd.openxmlformats-officedocument.presentationml.slide+xml',
      ],
    },
  },
};

/** Changes to a minimal Office package, each one a hostile (or harmless) variant. */
export interface OfficeVariant {
  /** Replaces the main part's content type (an `.xlsm` saved as `.xlsx`). */
  mainContentType?: string;
  /** Extra `<Default>` and `<Override>` content types. */
  defaults?: [string, string][];
  overrides?: [string, string][];
  /** Extra relationships from the main part (hyperlinks, remote templates). */
  relationships?: RelationshipSpec[];
  /** Extra parts, by name. */
  parts?: Record<string, ZipContent>;
  /** Leaves out these parts (`_rels/.rels`, `[Content_Types].xml`). */
  omit?: string[];
}

/** The entries of a minimal, structurally valid `.docx`, `.xlsx` or `.pptx`, with `variant` applied. */
export function officeEntries(kind: 'docx' | 'xlsx' | 'pptx', variant: OfficeVariant = {}): [string, ZipContent][] {
  const office = OFFICE_KINDS[kind];
  const folder = path.posix.dirname(office.mainPart);
  const mainRelationships = [...office.relationships, ...(variant.relationships ?? [])];
  const entries: [string, ZipContent][] = [
    [
      '[Content_Types].xml',
      contentTypesXml(
        [
          ['rels', 'application/vnd.openxmlformats-package.relationships+xml'],
          ['xml', 'application/xml'],
          ...(variant.defaults ?? []),
        ],
        [
          [`/${office.mainPart}`, variant.mainContentType ?? office.mainType],
          ...Object.entries(office.parts).map(([name, [, type]]): [string, string] => [`/${name}`, type]),
          ...(variant.overrides ?? []),
        ],
      ),
    ],
    ['_rels/.rels', relationshipsXml([{ type: RELATIONSHIP_TYPES.officeDocument, target: office.mainPart }])],
    [office.mainPart, office.mainXml],
    ...Object.entries(office.parts).map(([name, [xml]]): [string, ZipContent] => [name, xml]),
  ];
  if (mainRelationships.length > 0) {
    entries.push([`${folder}/_rels/${path.posix.basename(office.mainPart)}.rels`, relationshipsXml(mainRelationships)]);
  }
  entries.push(...Object.entries(variant.parts ?? {}));
  return entries.filter(([name]) => !variant.omit?.includes(name));
}
