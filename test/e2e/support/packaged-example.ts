import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { packageRoot } from '../../../src/package-root.js';
import { runCommand } from './run-command.js';

/** What the example's own package.json, .gitignore and the build leave behind: not part of its source. */
const GENERATED = new Set([
  'node_modules',
  '.next',
  'vendor',
  'next-env.d.ts',
  'tsconfig.tsbuildinfo',
  'package-lock.json',
]);
const COMPLETE_MARKER = '.mordn-example-complete';
const LOCK = '.lock';
/** A lock older than this is taken to belong to a run that died without removing it. */
const STALE_LOCK_MS = 30 * 60 * 1000;

export interface PackagedExample {
  /** The installed and built copy of examples/nextjs, ready for `next start`. */
  dir: string;
  /** The library's tarball, as installed there (vendor/mordn.tgz). */
  tarball: string;
  /** Whether an earlier run's install and build were reused (same tarball, same example sources). */
  reused: boolean;
  /** How long each step took, for the log. */
  steps: Array<{ step: string; ms: number }>;
}

async function sourceFiles(directory: string, relative = ''): Promise<string[]> {
  const entries = await readdir(path.join(directory, relative), { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (GENERATED.has(entry.name)) continue;
    const name = path.join(relative, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(directory, name)));
    else files.push(name);
  }
  return files;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `work` while holding a lock file in `directory`, so that two test runs on one machine never
 * install or build into the same copy at once (the second waits, then reuses the first's build).
 */
async function withLock<T>(directory: string, work: () => Promise<T>): Promise<T> {
  const lock = path.join(directory, LOCK);
  await mkdir(directory, { recursive: true });
  for (;;) {
    try {
      await writeFile(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(await readFile(lock, 'utf8').catch(() => ''));
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if ((holder > 0 && !isRunning(holder)) || age > STALE_LOCK_MS) await rm(lock, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}

/**
 * The example as a consumer gets it: the library packed by `npm pack` (scripts/pack-example.sh),
 * installed from that tarball into a copy of examples/nextjs (never linked to the source tree),
 * typechecked and built with `next build`. The copy lives outside the repository, keyed by the
 * tarball's and the example's content, so an unchanged library and example are installed and
 * built once; any change in either builds afresh, and older copies are removed (a concurrent run
 * still using one of those would then fail: run one suite per machine at a time while editing).
 */
export async function preparePackagedExample(log: (message: string) => void = () => {}): Promise<PackagedExample> {
  const cacheRoot = process.env.MORDN_TEST_EXAMPLE_CACHE ?? path.join(tmpdir(), 'mordn-example-nextjs');
  return withLock(cacheRoot, () => prepare(cacheRoot, log));
}

async function prepare(cacheRoot: string, log: (message: string) => void): Promise<PackagedExample> {
  const root = packageRoot();
  const exampleSource = path.join(root, 'examples', 'nextjs');
  const steps: PackagedExample['steps'] = [];
  const timed = async <T>(step: string, run: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    log(`example: ${step}…`);
    const result = await run();
    steps.push({ step, ms: Date.now() - started });
    return result;
  };

  const staging = path.join(cacheRoot, `pack-${process.pid}`);
  const packed = await timed('npm pack', async () =>
    (await runCommand(path.join(root, 'scripts', 'pack-example.sh'), [staging], { cwd: root }))
      .trim()
      .split('\n')
      .at(-1),
  );
  if (!packed || !existsSync(packed)) throw new Error(`scripts/pack-example.sh produced no tarball (${packed}).`);

  const hash = createHash('sha256').update(await readFile(packed));
  for (const file of await sourceFiles(exampleSource)) {
    hash.update(`\0${file}\0`).update(await readFile(path.join(exampleSource, file)));
  }
  const dir = path.join(cacheRoot, hash.digest('hex').slice(0, 16));
  const tarball = path.join(dir, 'vendor', 'mordn.tgz');

  if (existsSync(path.join(dir, COMPLETE_MARKER))) {
    await rm(staging, { recursive: true, force: true });
    log(`example: reusing ${dir}`);
    return { dir, tarball, reused: true, steps };
  }

  for (const entry of existsSync(cacheRoot) ? await readdir(cacheRoot) : []) {
    if (entry !== path.basename(staging) && entry !== LOCK) {
      await rm(path.join(cacheRoot, entry), { recursive: true, force: true });
    }
  }
  await mkdir(path.join(dir, 'vendor'), { recursive: true });
  for (const file of await sourceFiles(exampleSource)) {
    await cp(path.join(exampleSource, file), path.join(dir, file));
  }
  await rename(packed, tarball);
  await rm(staging, { recursive: true, force: true });

  await timed('npm install', () => runCommand('npm', ['install', '--no-audit', '--no-fund'], { cwd: dir }));
  await timed('npm run typecheck', () => runCommand('npm', ['run', 'typecheck'], { cwd: dir }));
  await timed('npm run build', () => runCommand('npm', ['run', 'build'], { cwd: dir }));
  await writeFile(path.join(dir, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
  return { dir, tarball, reused: false, steps };
}
