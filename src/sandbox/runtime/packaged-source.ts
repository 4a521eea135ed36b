import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { packageRoot } from '../../package-root.js';

const sources = new Map<string, Promise<Buffer>>();

/**
 * A program shipped beside the code (the file helper, the supervisor), read once from the
 * package root; a failed read is retried by the next call. Callers must not modify the buffer.
 *
 * @example
 * const helper = await packagedSource('src/sandbox/runtime/fileops.py');
 */
export function packagedSource(relativePath: string): Promise<Buffer> {
  let source = sources.get(relativePath);
  if (!source) {
    source = readFile(path.join(packageRoot(), relativePath)).catch((error: unknown) => {
      sources.delete(relativePath);
      throw error;
    });
    sources.set(relativePath, source);
  }
  return source;
}
