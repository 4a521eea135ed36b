import { chmod, chown, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { runMordn, spawnMordn } from './support/process.js';
import { runMordnToExit } from './support/run-to-exit.js';

let target: TestDatabaseTarget;

beforeEach(async () => {
  target = await createTestDatabaseTarget();
});
afterEach(() => target.destroy());

/** Each test starts the CLI through tsx once or twice: seconds each on a busy 2-core machine. */
const PROCESS_TIMEOUT = { timeout: 90_000 };
const SECRET = 'restored-signing-secret-0123456789abcdef';

async function mode(file: string): Promise<string> {
  return `0${((await stat(file)).mode & 0o777).toString(8)}`;
}

/** Starts `mordn serve` on the target, runs `check` while it listens, then stops it. */
async function whileServing(
  environment: Record<string, string>,
  check: (logs: Array<Record<string, unknown>>) => Promise<void>,
): Promise<void> {
  const service = spawnMordn(['serve'], { ...target.environment, PORT: '0', ...environment });
  try {
    await service.waitForLog((line) => line.msg === 'mordn listening', 30_000);
    const logs = service.stdout.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
    await check(logs);
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
  }
}

describe('the data directory', PROCESS_TIMEOUT, () => {
  it('is created private, with private files, when it does not exist yet', async () => {
    const dataDir = path.join(target.dataDir, 'nested', 'data');
    await whileServing({ MORDN_DATA_DIR: dataDir }, async () => {
      expect(await mode(dataDir)).toBe('0700');
      expect(await mode(path.join(target.dataDir, 'nested'))).toBe('0700');
      expect(await mode(path.join(dataDir, 'signing-secret'))).toBe('0600');
      if (target.dialect === 'sqlite') {
        for (const file of ['mordn.db', 'mordn.db-wal', 'mordn.db-shm']) {
          expect(`${file} ${await mode(path.join(dataDir, file))}`).toBe(`${file} 0600`);
        }
      }
    });
  });

  it('is made private when it was created beforehand readable by everyone, and so is what it holds', async () => {
    const dataDir = target.dataDir;
    // A first run makes the database (and its WAL files); then everything is loosened, as an
    // image's `mkdir -p`, a restore or a provisioning script would leave it.
    expect((await runMordn(['migrate'], target.environment)).code).toBe(0);
    await writeFile(path.join(dataDir, 'signing-secret'), SECRET);
    await mkdir(path.join(dataDir, 'workspaces'));
    await mkdir(path.join(dataDir, 'files'));
    const loosened = (await readdir(dataDir)).map((name) => path.join(dataDir, name));
    for (const entry of loosened) await chmod(entry, (await stat(entry)).isDirectory() ? 0o755 : 0o644);
    await chmod(dataDir, 0o755);
    expect(await mode(path.join(dataDir, 'signing-secret'))).toBe('0644');

    await whileServing({}, async (logs) => {
      expect(await mode(dataDir)).toBe('0700');
      for (const entry of loosened) {
        const expected = (await stat(entry)).isDirectory() ? '0700' : '0600';
        expect(`${path.basename(entry)} ${await mode(entry)}`).toBe(`${path.basename(entry)} ${expected}`);
      }
      if (target.dialect === 'sqlite') {
        for (const file of ['mordn.db', 'mordn.db-wal', 'mordn.db-shm']) {
          expect(`${file} ${await mode(path.join(dataDir, file))}`).toBe(`${file} 0600`);
        }
      }
      const repairs = logs.filter((line) => line.msg === 'made a data directory path private');
      expect(repairs).toContainEqual(expect.objectContaining({ level: 40, path: dataDir, from: '0755', to: '0700' }));
      expect(repairs).toContainEqual(
        expect.objectContaining({ path: path.join(dataDir, 'signing-secret'), from: '0644', to: '0600' }),
      );
    });
  });

  it('is made private by mordn init too, which reports it on stderr and keeps stdout JSON', async () => {
    await chmod(target.dataDir, 0o775);
    const init = await runMordn(['init', '--json'], target.environment);
    expect(init.code).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({ status: 'created' });
    expect(init.stderr).toContain(`made ${target.dataDir} private (mode 0775 → 0700)`);
    expect(await mode(target.dataDir)).toBe('0700');
    if (target.dialect === 'sqlite') expect(await mode(path.join(target.dataDir, 'mordn.db'))).toBe('0600');
  });

  it.skipIf(process.getuid?.() !== 0)('is refused, named, when another user owns it', async () => {
    const dataDir = path.join(target.dataDir, 'foreign');
    await mkdir(dataDir, { mode: 0o777 });
    await chmod(dataDir, 0o777);
    await chown(dataDir, 4242, 4242);
    try {
      const result = await runMordnToExit(['serve'], { ...target.environment, PORT: '0', MORDN_DATA_DIR: dataDir });
      expect(result.listened).toBe(false);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`MORDN_DATA_DIR ${dataDir} belongs to uid 4242`);
      expect(await readdir(dataDir)).toEqual([]);
      expect(await mode(dataDir)).toBe('0777');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
