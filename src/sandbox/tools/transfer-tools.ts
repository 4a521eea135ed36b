import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DurableFileWriter } from '../../storage/durable-file-writer.js';
import { createStoragePath } from '../../storage/storage-path.js';
import { temporaryFilePath } from '../../temporary-files.js';
import { type FileDescriptor, resignFile } from '../../uploads/file-links.js';
import { findOwnedFile, registerStoredFile, type StoredFile } from '../../uploads/file-registry.js';
import { sanitizeFilename } from '../../uploads/filename.js';
import { inspectFile } from '../../uploads/inspect.js';
import { ALL_UPLOAD_TYPES, DOCX, PPTX, type UploadMediaType, XLSX } from '../../uploads/media-types.js';
import { admitStoredBytes } from '../../usage/limits.js';
import { WorkspaceFileError } from '../backend.js';
import { requireQuota } from './file-tools.js';
import { type ToolContext, ToolError } from './tool-context.js';

const IMPORT_FOLDER = 'uploads';
const MAX_NAME_ATTEMPTS = 50;

/** File name extensions of each publishable type; the first is the one added when missing. */
const EXTENSIONS: Record<UploadMediaType, string[]> = {
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg'],
  'image/webp': ['webp'],
  'image/gif': ['gif'],
  'application/pdf': ['pdf'],
  [DOCX]: ['docx'],
  [XLSX]: ['xlsx'],
  [PPTX]: ['pptx'],
  'text/plain': ['txt', 'text', 'log'],
  'text/markdown': ['md', 'markdown'],
  'text/csv': ['csv'],
  'text/tab-separated-values': ['tsv', 'tab'],
  'application/json': ['json'],
};

/** `report.exe` published as a PDF downloads as `report.exe.pdf`: the name never lies about the type. */
function withExtensionFor(filename: string, mediaType: UploadMediaType): string {
  const extension = path.extname(filename).slice(1).toLowerCase();
  const allowed = EXTENSIONS[mediaType];
  return allowed.includes(extension) ? filename : `${filename}.${allowed[0]}`;
}

/** `data.csv`, then `data (2).csv`, `data (3).csv`… */
function candidateName(filename: string, attempt: number): string {
  if (attempt === 1) return filename;
  const extension = path.extname(filename);
  return `${filename.slice(0, filename.length - extension.length)} (${attempt})${extension}`;
}

/**
 * Copies one of the caller's own uploads into `uploads/` under its sanitized name (never
 * overwriting: a taken name gets a number). The storage path is looked up in the registry for
 * exactly this tenant, agent and user first — a reference is not proof of ownership.
 */
export async function importFile(context: ToolContext, input: { storagePath: string }) {
  const file = await findOwnedFile(context.db, context.owner, input.storagePath);
  if (!file) {
    throw new ToolError(
      'UPLOAD_NOT_FOUND',
      'No such uploaded file for this user. Ask the user to upload it again, then use the new reference.',
    );
  }
  await requireQuota(context, file.size);
  const filename = sanitizeFilename(file.filename);
  for (let attempt = 1; attempt <= MAX_NAME_ATTEMPTS; attempt += 1) {
    const target = `${IMPORT_FOLDER}/${candidateName(filename, attempt)}`;
    const { body } = await context.storage.get(file.storagePath);
    try {
      const { size } = await context.backend.writeFile(context.workspace.id, target, body, {
        maxBytes: file.size,
        exclusive: true,
      });
      return { path: target, size, mediaType: file.mediaType, filename: file.filename };
    } catch (error) {
      body.destroy();
      if (error instanceof WorkspaceFileError && error.code === 'EXISTS') continue;
      throw error;
    }
  }
  throw new ToolError('EXISTS', `Too many files named ${filename} in ${IMPORT_FOLDER}/; rename or delete some.`);
}

/**
 * Publishes a workspace file as a download: at most the managed ceiling, its type detected from
 * the bytes (publishable types only), stored durably in private storage and registered as an
 * artifact of this user. Everything returned comes from that stored record, not from the input.
 */
export async function publishFile(
  context: ToolContext,
  input: { path: string; filename?: string | undefined },
): Promise<{ file: FileDescriptor }> {
  const { size, body } = await context.backend.openFile(context.workspace.id, input.path, {
    maxBytes: context.publishMaxBytes,
  });
  await mkdir(context.tempDir, { recursive: true, mode: 0o700 });
  const tempPath = temporaryFilePath(context.tempDir, 'publish');
  const hash = createHash('sha256');
  let copied = 0;
  try {
    await pipeline(
      body,
      new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          copied += chunk.length;
          if (copied > context.publishMaxBytes) {
            callback(new ToolError('TOO_LARGE', `Published files may be at most ${context.publishMaxBytes} bytes.`));
            return;
          }
          hash.update(chunk);
          callback(null, chunk);
        },
      }),
      new DurableFileWriter(tempPath),
      { signal: context.signal },
    );
    if (copied !== size) throw new ToolError('INTERNAL', 'The file changed while it was being published; try again.');

    const requested = sanitizeFilename(input.filename ?? path.posix.basename(input.path));
    const inspection = await inspectFile(tempPath, { filename: requested, size: copied });
    if (!inspection.accepted) {
      throw new ToolError(
        'UNSUPPORTED_MEDIA_TYPE',
        `This file cannot be published: ${inspection.reason} (detected ${inspection.detectedType}; publishable: ${ALL_UPLOAD_TYPES.join(', ')}).`,
      );
    }
    const stored: StoredFile = {
      storagePath: createStoragePath('artifact'),
      kind: 'artifact',
      filename: withExtensionFor(requested, inspection.mediaType),
      mediaType: inspection.mediaType,
      size: copied,
      sha256: hash.digest('hex'),
      createdAt: Date.now(),
    };
    await admitStoredBytes(context.db, context.owner, stored.size);
    try {
      await context.storage.putFile(stored.storagePath, tempPath, { contentType: stored.mediaType, size: stored.size });
    } catch (error) {
      context.logger.error({ requestId: context.requestId, err: error }, 'storage refused an artifact');
      throw new ToolError(
        'STORAGE_UNAVAILABLE',
        'File storage is unavailable; nothing was published. Try again later.',
      );
    }
    try {
      await registerStoredFile(context.db, context.owner, stored);
    } catch (error) {
      await context.storage.delete(stored.storagePath).catch(() => undefined);
      throw error;
    }
    context.usage?.add(context.owner, { artifactBytesPublished: stored.size });
    // Signed from the registry entry just written, exactly as the signer would for a client.
    const signed = await resignFile(context, context.owner, stored.storagePath);
    if (!signed.file) throw new ToolError('INTERNAL', 'The published file could not be signed.');
    return { file: signed.file };
  } finally {
    await rm(tempPath, { force: true });
  }
}
