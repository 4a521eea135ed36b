import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/package-root.js';

/** The README as committed, read once. */
export function readme(): string {
  return readFileSync(path.join(packageRoot(), 'README.md'), 'utf8');
}

/**
 * The text of one section: from its heading line (`## Admin walkthrough`) to the next heading of
 * the same or a higher level. Fails loudly when the heading is gone, so a renamed section cannot
 * make a contract test pass vacuously.
 */
export function section(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`The README has no section "${heading}".`);
  let fenced = false;
  let end = lines.length;
  for (let index = start + 1; index < lines.length; index += 1) {
    const line = lines[index] as string;
    // A `# comment` inside a shell block is not a heading.
    if (line.startsWith('```')) fenced = !fenced;
    const depth = fenced ? undefined : /^(#+) /.exec(line)?.[1]?.length;
    if (depth !== undefined && depth <= level) {
      end = index;
      break;
    }
  }
  return lines.slice(start, end).join('\n');
}

/** The contents of the section's ```sh blocks, in order. */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string);
}

/** Text with every parenthesised remark removed (innermost first, so nested links go too). */
function withoutRemarks(text: string): string {
  let current = text;
  for (;;) {
    const next = current.replace(/\([^()]*\)/g, '');
    if (next === current) return current;
    current = next;
  }
}

/** The `UPPER_SNAKE` codes named in backticks, ignoring those inside parenthesised remarks. */
export function namedCodes(text: string): string[] {
  return [...withoutRemarks(text).matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`/g)].map((match) => match[1] as string);
}

/**
 * The README's error table (`| status | codes |`), as code → status. A code listed twice, or a
 * row that is not a status, fails.
 */
export function errorTable(markdown: string): Map<string, number> {
  const lines = markdown.split('\n');
  const header = lines.indexOf('| status | codes |');
  if (header < 0) throw new Error('The README has no "| status | codes |" table.');
  const table = new Map<string, number>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [, status, codes] = /^\| (\d{3}) \| (.*) \|$/.exec(line) ?? [];
    if (!status || codes === undefined) throw new Error(`Not an error table row: ${line}`);
    for (const code of namedCodes(codes)) {
      if (table.has(code)) throw new Error(`${code} is listed twice in the error table.`);
      table.set(code, Number(status));
    }
  }
  return table;
}

/** The string literals of a TypeScript union type alias (`export type Name = | 'A' | 'B';`) in a source file. */
export function unionMembers(sourceFile: string, typeName: string): string[] {
  const source = readFileSync(path.join(packageRoot(), sourceFile), 'utf8');
  const declaration = new RegExp(`export type ${typeName} =([^;]*);`).exec(source)?.[1];
  if (declaration === undefined) throw new Error(`${sourceFile} declares no union ${typeName}.`);
  return [...declaration.matchAll(/'([A-Z_]+)'/g)].map((match) => match[1] as string);
}

/** Whether a command is on the PATH. */
export function hasCommand(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((directory) => {
    try {
      accessSync(path.join(directory, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs a bash script (with `pipefail` and `-eu`) and collects its output; it must exit 0. */
export function runBash(
  script: string,
  environment: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...environment }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`bash failed (${error.message}):\n${stdout}\n${stderr}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}
