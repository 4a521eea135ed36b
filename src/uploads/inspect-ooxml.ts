import { XMLParser } from 'fast-xml-parser';
import type { Entry, ZipFile } from 'yauzl';
import yauzl from 'yauzl';
import { z } from 'zod';
import { type Inspection, refuse } from './inspection.js';
import { DOCX, PPTX, XLSX } from './media-types.js';

/**
 * Bounds on what an Office package may unpack to. Every one is counted while the entries are
 * streamed (declared sizes are only an early hint), and reading stops at the first one passed.
 */
export interface ZipLimits {
  /** Entries in the central directory. */
  maxEntries: number;
  /** Bytes inflated across all entries. */
  maxTotalInflatedBytes: number;
  /** Bytes inflated from any one entry. */
  maxEntryInflatedBytes: number;
  /** Inflated over compressed bytes, per entry and for the whole archive. */
  maxRatio: number;
  /** Bytes of an XML part that is parsed (`[Content_Types].xml`, `.rels`). */
  maxXmlPartBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_ZIP_LIMITS: Readonly<ZipLimits> = {
  maxEntries: 2000,
  maxTotalInflatedBytes: 64 * MiB,
  maxEntryInflatedBytes: 32 * MiB,
  maxRatio: 100,
  maxXmlPartBytes: 4 * MiB,
};

/** Below this many inflated bytes the ratio is not judged: small XML parts compress very well. */
const RATIO_GRACE_BYTES = MiB;
const ZIP = 'application/zip';

/** Content types come from the file: only a plain, short MIME type is ever echoed back to the caller. */
const PLAIN_MEDIA_TYPE = /^[a-z][\w.+-]{0,63}\/[a-z0-9][\w.+-]{0,127}$/i;

/**
 * The package's media type from its main part's content type: Open XML types drop `.main+xml`
 * (`…wordprocessingml.document.main+xml` → DOCX); Microsoft's macro-enabled ones also gain the
 * `.12` they are registered with (`…ms-excel.sheet.macroEnabled.main+xml` → `….macroEnabled.12`).
 */
function packageTypeOf(mainType: string): string {
  const base = mainType.replace(/\.main(\+xml)?$/, '');
  const type = /macroEnabled/i.test(base) ? `${base.replace(/macroEnabledTemplate$/i, 'macroEnabled')}.12` : base;
  return PLAIN_MEDIA_TYPE.test(type) ? type : ZIP;
}

function isMainType(contentType: string): boolean {
  return /\.main(\+xml)?$/.test(contentType);
}

/** The macro-enabled sibling of each accepted type: what a package carrying a VBA project really is. */
const MACRO_TYPES: Record<string, string> = {
  [DOCX]: 'application/vnd.ms-word.document.macroEnabled.12',
  [XLSX]: 'application/vnd.ms-excel.sheet.macroEnabled.12',
  [PPTX]: 'application/vnd.ms-powerpoint.presentation.macroEnabled.12',
};

const xmlParser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  removeNSPrefix: true,
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (name) => name === 'Default' || name === 'Override' || name === 'Relationship',
});

const contentTypesSchema = z.object({
  Types: z.object({
    Default: z.array(z.object({ Extension: z.string(), ContentType: z.string() })).default([]),
    Override: z.array(z.object({ PartName: z.string(), ContentType: z.string() })).default([]),
  }),
});

const relationshipSchema = z.object({ Type: z.string(), Target: z.string(), TargetMode: z.string().optional() });
const relationshipsSchema = z.object({
  Relationships: z
    .union([z.object({ Relationship: z.array(relationshipSchema).default([]) }), z.literal('')])
    .transform((value) => (value === '' ? [] : value.Relationship)),
});

type Relationship = z.infer<typeof relationshipSchema>;

/** What one pass over the package learned; part names are lowercased (OPC names ignore case). */
interface PackageScan {
  entries: Set<string>;
  /** Part name (`/word/document.xml`) or `.extension` → content type. */
  contentTypes?: Map<string, string>;
  relationships: Map<string, Relationship[]>;
  hasVbaProject: boolean;
  hasActiveX: boolean;
  hasOleObject: boolean;
}

/** Thrown from deep inside the scan to stop reading at once; its message is the refusal's reason. */
class Refusal extends Error {}

function formatSize(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`;
}

function isFileSystemError(error: unknown): boolean {
  return error instanceof Error && 'syscall' in error;
}

function isSafeEntryName(name: string): boolean {
  if (name === '' || name.includes('\\') || name.startsWith('/') || /^[a-z]:/i.test(name)) return false;
  if ([...name].some((character) => character.charCodeAt(0) < 0x20)) return false;
  return !name.split('/').includes('..');
}

/** Compares the name in the entry's local header with the central directory's, so no reader sees another file. */
async function hasMatchingLocalName(zipfile: ZipFile, entry: Entry): Promise<boolean> {
  const header = await zipfile.readLocalFileHeaderPromise(entry);
  return header.fileName.equals(entry.fileNameRaw);
}

/** Counts inflated bytes against the limits, for one entry and for the whole archive. */
class InflationMeter {
  private total = 0;

  constructor(
    private readonly limits: ZipLimits,
    private readonly archiveSize: number,
  ) {}

  /** Checks the sizes an entry declares, before inflating anything. */
  checkDeclared(entry: Entry): void {
    this.check(entry.uncompressedSize, entry.compressedSize, 0);
  }

  /** Adds `chunk` inflated bytes; `inflated` already counts them. */
  add(inflated: number, compressed: number, chunk: number): void {
    this.total += chunk;
    this.check(inflated, compressed, this.total);
  }

  private check(inflated: number, compressed: number, total: number): void {
    const { maxEntryInflatedBytes, maxTotalInflatedBytes, maxRatio } = this.limits;
    if (inflated > maxEntryInflatedBytes) {
      throw new Refusal(`A part of the document unpacks to more than ${formatSize(maxEntryInflatedBytes)}`);
    }
    if (total > maxTotalInflatedBytes) {
      throw new Refusal(`The document unpacks to more than ${formatSize(maxTotalInflatedBytes)}`);
    }
    const entryRatioPassed = inflated > RATIO_GRACE_BYTES && inflated > maxRatio * Math.max(compressed, 1);
    const overallRatioPassed = total > RATIO_GRACE_BYTES && total > maxRatio * this.archiveSize;
    if (entryRatioPassed || overallRatioPassed) {
      throw new Refusal(`The document unpacks to more than ${maxRatio} times its compressed size`);
    }
  }
}

/** Streams one entry through the meter, keeping its bytes only when `keep` (a part to parse). */
async function readEntry(zipfile: ZipFile, entry: Entry, meter: InflationMeter, keep: number): Promise<Buffer> {
  const stream = await zipfile.openReadStreamPromise(entry);
  const chunks: Buffer[] = [];
  let inflated = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    inflated += chunk.length;
    meter.add(inflated, entry.compressedSize, chunk.length);
    if (keep === 0) continue;
    if (inflated > keep) throw new Refusal(`A part of the document that must be read is over ${formatSize(keep)}`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function decodeXml(bytes: Buffer): string {
  const encoding =
    bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : 'utf-8';
  return new TextDecoder(encoding, { fatal: true }).decode(bytes);
}

/** Parses an XML part we must read, refusing DTDs outright: Office never writes them. */
function parsePart<T>(bytes: Buffer, schema: z.ZodType<T>, what: string): T {
  try {
    const text = decodeXml(bytes);
    if (text.includes('<!DOCTYPE')) throw new Refusal(`The document's ${what} contain a DTD`);
    return schema.parse(xmlParser.parse(text, true));
  } catch (error) {
    if (error instanceof Refusal) throw error;
    throw new Refusal(`The document's ${what} cannot be read`);
  }
}

function noteEntryName(scan: PackageScan, name: string): void {
  const segments = name.split('/');
  const basename = segments.at(-1) ?? '';
  if (basename.startsWith('vbaproject')) scan.hasVbaProject = true;
  if (segments.slice(0, -1).includes('activex')) scan.hasActiveX = true;
  if (segments.slice(0, -1).includes('embeddings') && basename.endsWith('.bin')) scan.hasOleObject = true;
}

function noteContentType(scan: PackageScan, contentType: string): void {
  const type = contentType.toLowerCase();
  if (type.includes('vbaproject') || type.includes('macroenabled')) scan.hasVbaProject = true;
  if (type.includes('activex')) scan.hasActiveX = true;
  if (type.includes('oleobject')) scan.hasOleObject = true;
}

/** Refuses an entry on its central-directory record alone, before anything is inflated. */
async function checkEntry(zipfile: ZipFile, entry: Entry, scan: PackageScan, meter: InflationMeter): Promise<void> {
  const name = entry.fileName.toLowerCase();
  if (!isSafeEntryName(entry.fileName)) throw new Refusal('The document contains unsafe part names');
  if (scan.entries.has(name)) throw new Refusal('The document contains the same part twice');
  if (entry.isEncrypted()) throw new Refusal('The document contains encrypted parts');
  if (!entry.canDecodeFileData()) throw new Refusal('The document uses an unsupported compression method');
  if (!(await hasMatchingLocalName(zipfile, entry))) throw new Refusal('The document has inconsistent part names');
  meter.checkDeclared(entry);
}

function recordContentTypes(scan: PackageScan, bytes: Buffer): void {
  const { Types } = parsePart(bytes, contentTypesSchema, 'content types');
  const contentTypes = new Map<string, string>();
  for (const { Extension, ContentType } of Types.Default) contentTypes.set(`.${Extension.toLowerCase()}`, ContentType);
  for (const { PartName, ContentType } of Types.Override) contentTypes.set(PartName.toLowerCase(), ContentType);
  for (const contentType of contentTypes.values()) noteContentType(scan, contentType);
  scan.contentTypes = contentTypes;
}

/** One pass over every entry: names checked, bytes counted, content types and relationships parsed. */
async function scanPackage(zipfile: ZipFile, limits: ZipLimits): Promise<PackageScan> {
  const tooMany = `The document has more than ${limits.maxEntries} parts`;
  if (zipfile.entryCount > limits.maxEntries) throw new Refusal(tooMany);
  const meter = new InflationMeter(limits, zipfile.fileSize);
  const scan: PackageScan = {
    entries: new Set(),
    relationships: new Map(),
    hasVbaProject: false,
    hasActiveX: false,
    hasOleObject: false,
  };
  for await (const entry of zipfile.eachEntry()) {
    if (scan.entries.size >= limits.maxEntries) throw new Refusal(tooMany);
    await checkEntry(zipfile, entry, scan, meter);
    const name = entry.fileName.toLowerCase();
    scan.entries.add(name);
    noteEntryName(scan, name);
    const isContentTypes = name === '[content_types].xml';
    const isRelationships = name.endsWith('.rels');
    const keep = isContentTypes || isRelationships ? limits.maxXmlPartBytes : 0;
    const bytes = await readEntry(zipfile, entry, meter, keep);
    if (isContentTypes) recordContentTypes(scan, bytes);
    if (isRelationships) {
      scan.relationships.set(name, parsePart(bytes, relationshipsSchema, 'relationships').Relationships);
    }
  }
  return scan;
}

function isExternal(relationship: Relationship): boolean {
  return relationship.TargetMode?.toLowerCase() === 'external';
}

/** The main part named by the package's officeDocument relationship, as a lowercased part name. */
function mainPartName(scan: PackageScan): string | undefined {
  const officeDocument = scan.relationships
    .get('_rels/.rels')
    ?.find((relationship) => relationship.Type.endsWith('/officeDocument') && !isExternal(relationship));
  if (officeDocument === undefined) return undefined;
  const segments: string[] = [];
  for (const segment of officeDocument.Target.split('/')) {
    if (segment === '..' && segments.pop() === undefined) return undefined;
    if (segment !== '' && segment !== '.' && segment !== '..') segments.push(segment);
  }
  return `/${segments.join('/')}`.toLowerCase();
}

function judgePackage(scan: PackageScan): Inspection {
  const contentTypes = scan.contentTypes;
  if (contentTypes === undefined) {
    return refuse(ZIP, 'This is a ZIP archive, not an Office document; archives are not accepted');
  }
  const mainPart = mainPartName(scan);
  const extension = mainPart?.slice(mainPart.lastIndexOf('.')) ?? '';
  const mainType = mainPart === undefined ? undefined : (contentTypes.get(mainPart) ?? contentTypes.get(extension));
  if (mainPart === undefined || mainType === undefined || !scan.entries.has(mainPart.slice(1))) {
    const declared = [...contentTypes.values()].find(isMainType);
    return refuse(
      declared === undefined ? ZIP : packageTypeOf(declared),
      'The document has no main part, or its package relationships do not point to it',
    );
  }
  const packageType = packageTypeOf(mainType);
  if (packageType !== DOCX && packageType !== XLSX && packageType !== PPTX) {
    return refuse(
      packageType,
      /macroenabled/i.test(mainType)
        ? 'Macro-enabled Office documents are not accepted'
        : 'Only Word documents, Excel workbooks and PowerPoint presentations (.docx, .xlsx, .pptx) are accepted',
    );
  }
  if (scan.hasVbaProject) return refuse(MACRO_TYPES[packageType] ?? packageType, 'The document contains macros');
  if (scan.hasActiveX) return refuse(packageType, 'The document contains ActiveX controls');
  if (scan.hasOleObject) return refuse(packageType, 'The document contains embedded OLE objects');
  for (const relationships of scan.relationships.values()) {
    const external = relationships.find(
      (relationship) => isExternal(relationship) && !relationship.Type.endsWith('/hyperlink'),
    );
    if (external !== undefined) {
      const last = external.Type.split('/').pop() ?? '';
      const kind = /^[a-z][\w.-]{0,63}$/i.test(last) ? last : 'resource';
      return refuse(packageType, `The document loads external content (${kind}); only hyperlinks may point outside it`);
    }
  }
  return { accepted: true, mediaType: packageType };
}

/**
 * Inspects a ZIP that claims to be an Office document and accepts exactly `.docx`, `.xlsx` and
 * `.pptx` packages with nothing active in them. The file is read with random access; every entry
 * is inflated once, counted against `limits` while streaming, and only `[Content_Types].xml` and
 * the `.rels` parts are kept in memory (up to `maxXmlPartBytes` each) to be parsed.
 *
 * Refused: anything over a limit, unsafe or duplicate entry names, encrypted entries, a missing
 * or unreadable `[Content_Types].xml` or `_rels/.rels`, a main part whose content type is not
 * exactly the docx/xlsx/pptx one (macro-enabled files, templates, add-ins, slideshows…), VBA
 * projects, ActiveX controls, embedded OLE objects, and external relationships other than
 * hyperlinks (a remote template, image or data source would be fetched when the file is opened).
 * A damaged archive is refused too; only I/O errors on the file itself are thrown.
 *
 * @example
 * await inspectOoxml('/tmp/upload-1'); // { accepted: true, mediaType: DOCX }
 * await inspectOoxml('/tmp/upload-2', { maxEntries: 100 }); // { accepted: false, detectedType: 'application/zip', … }
 */
export async function inspectOoxml(filePath: string, limits: Partial<ZipLimits> = {}): Promise<Inspection> {
  const bounds: ZipLimits = { ...DEFAULT_ZIP_LIMITS, ...limits };
  let zipfile: ZipFile;
  try {
    zipfile = await yauzl.openPromise(filePath, {
      lazyEntries: true,
      autoClose: false,
      validateEntrySizes: true,
      strictFileNames: true,
    });
  } catch (error) {
    if (isFileSystemError(error)) throw error;
    return refuse(ZIP, 'The ZIP structure of the file is damaged');
  }
  // A late failure to close the descriptor cannot change the verdict, but unheard it would crash the process.
  zipfile.on('error', () => undefined);
  try {
    return judgePackage(await scanPackage(zipfile, bounds));
  } catch (error) {
    if (error instanceof Refusal) return refuse(ZIP, error.message);
    if (isFileSystemError(error)) throw error;
    return refuse(ZIP, 'The ZIP structure of the file is damaged or unsafe');
  } finally {
    zipfile.close();
  }
}
