import { readFileSync } from 'node:fs';

/** The `NAME=value` (or `export NAME=value`) lines of an env file written by one of the setup scripts. */
export function readEnvFile(file: string): Record<string, string> {
  const entries = readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => /^(?:export )?([A-Z0-9_]+)=(.*)$/.exec(line.trim()))
    .filter((match) => match !== null)
    .map((match) => [match[1] ?? '', match[2] ?? ''] as const);
  return Object.fromEntries(entries);
}
