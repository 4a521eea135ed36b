import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { DatabaseSchema } from '../../src/db/schema.js';

/** Every regular file below `directory` (relative paths, sorted), skipping the named subdirectories. */
async function filesBelow(directory: string, skip: string[] = []): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)))
    .filter((relative) => !skip.some((name) => relative === name || relative.startsWith(`${name}/`)))
    .sort();
}

/**
 * What a local-storage data directory holds against what the database registers: rows whose
 * object is missing or differs (size, SHA-256), and objects under `files/` no row claims.
 */
export async function storedObjectMismatches(
  dataDir: string,
  db: Kysely<DatabaseSchema>,
): Promise<{ rows: number; broken: string[]; unregistered: string[] }> {
  const root = path.join(dataDir, 'files');
  const rows = await db.selectFrom('stored_files').select(['storage_path', 'size', 'sha256']).execute();
  const broken: string[] = [];
  for (const row of rows) {
    const file = path.join(root, row.storage_path);
    const bytes = await readFile(file).catch(() => undefined);
    if (!bytes) broken.push(`${row.storage_path}: missing`);
    else if (bytes.length !== Number(row.size))
      broken.push(`${row.storage_path}: ${bytes.length} bytes, not ${row.size}`);
    else if (createHash('sha256').update(bytes).digest('hex') !== row.sha256) broken.push(`${row.storage_path}: hash`);
  }
  const registered = new Set(rows.map((row) => row.storage_path));
  const unregistered = (await filesBelow(root, ['.incoming'])).filter((object) => !registered.has(object));
  return { rows: rows.length, broken, unregistered };
}

/** The files in the data directory's places for bytes in transit (`tmp/`, `files/.incoming/`), with sizes. */
export async function temporaryLeftovers(dataDir: string): Promise<Array<{ file: string; size: number }>> {
  const found: Array<{ file: string; size: number }> = [];
  for (const directory of ['tmp', path.join('files', '.incoming')]) {
    for (const name of await filesBelow(path.join(dataDir, directory))) {
      const file = path.join(directory, name);
      const size = await stat(path.join(dataDir, file)).then(
        (stats) => stats.size,
        () => -1,
      );
      if (size >= 0) found.push({ file, size });
    }
  }
  return found;
}
