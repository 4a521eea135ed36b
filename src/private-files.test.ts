import { chmod, chown, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensurePrivateFile, PrivatePathError, tightenPermissions } from './private-files.js';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'mordn-private-'));
});
afterEach(() => rm(directory, { recursive: true, force: true }));

async function mode(target: string): Promise<number> {
  return (await stat(target)).mode & 0o777;
}

describe('tightenPermissions', () => {
  it.each([
    [0o644, 0o600, '0644', '0600'],
    [0o666, 0o600, '0666', '0600'],
    [0o755, 0o700, '0755', '0700'],
    [0o440, 0o400, '0440', '0400'],
  ])('turns %o into %o and reports it', async (before, after, from, to) => {
    const file = path.join(directory, 'file');
    await writeFile(file, 'x');
    await chmod(file, before);
    expect(tightenPermissions(file)).toEqual({ path: file, from, to });
    expect(await mode(file)).toBe(after);
  });

  it('never adds a permission and leaves a private path alone', async () => {
    const file = path.join(directory, 'read-only');
    await writeFile(file, 'x');
    await chmod(file, 0o400);
    expect(tightenPermissions(file)).toBeUndefined();
    expect(await mode(file)).toBe(0o400);
  });

  it('ignores a missing path', () => {
    expect(tightenPermissions(path.join(directory, 'missing'))).toBeUndefined();
  });

  it('does not follow a symbolic link out of the directory', async () => {
    const outside = path.join(directory, 'outside');
    await writeFile(outside, 'x');
    await chmod(outside, 0o644);
    await symlink(outside, path.join(directory, 'link'));
    expect(tightenPermissions(path.join(directory, 'link'))).toBeUndefined();
    expect(await mode(outside)).toBe(0o644);
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a path another user owns, naming it', async () => {
    const foreign = path.join(directory, 'foreign');
    await mkdir(foreign, { mode: 0o755 });
    await chown(foreign, 4242, 4242);
    expect(() => tightenPermissions(foreign, { label: 'MORDN_DATA_DIR' })).toThrow(PrivatePathError);
    expect(() => tightenPermissions(foreign, { label: 'MORDN_DATA_DIR' })).toThrow(
      `MORDN_DATA_DIR ${foreign} belongs to uid 4242`,
    );
    expect(await mode(foreign)).toBe(0o755);
  });
});

describe('ensurePrivateFile', () => {
  it('creates a missing file empty with mode 0600, whatever the umask allows', async () => {
    const file = path.join(directory, 'mordn.db');
    const previous = process.umask(0o000);
    try {
      expect(ensurePrivateFile(file)).toBeUndefined();
    } finally {
      process.umask(previous);
    }
    expect(await mode(file)).toBe(0o600);
    expect((await stat(file)).size).toBe(0);
  });

  it('tightens an existing file and keeps its content', async () => {
    const file = path.join(directory, 'mordn.db');
    await writeFile(file, 'data');
    await chmod(file, 0o644);
    expect(ensurePrivateFile(file)).toMatchObject({ from: '0644', to: '0600' });
    expect((await stat(file)).size).toBe(4);
  });
});
