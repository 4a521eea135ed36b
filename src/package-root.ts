import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The directory of Mordn's package.json, whether running from `src/` (tests, tsx) or from the
 * compiled `dist/src/`. Used to find files shipped beside the code, such as `openapi/`.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let directory = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(directory, 'package.json');
    if (existsSync(candidate) && JSON.parse(readFileSync(candidate, 'utf8')).name === 'mordn') {
      cached = directory;
      return directory;
    }
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error('Cannot find the mordn package root');
    directory = parent;
  }
}

/** The `version` of Mordn's package.json. */
export function packageVersion(): string {
  return JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')).version as string;
}
