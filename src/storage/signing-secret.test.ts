import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadOrCreateSigningSecret, SIGNING_SECRET_FILE } from './signing-secret.js';

let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-secret-'));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

describe('loadOrCreateSigningSecret', () => {
  it('creates 32 random bytes (base64url) in a file only its owner can read', async () => {
    const secret = await loadOrCreateSigningSecret(dataDir);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const file = path.join(dataDir, SIGNING_SECRET_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).toBe(secret);
  });

  it('returns the same secret on every later start', async () => {
    const first = await loadOrCreateSigningSecret(dataDir);
    expect(await loadOrCreateSigningSecret(dataDir)).toBe(first);
  });

  it('agrees on one secret when several processes start at once, leaving no temporary files', async () => {
    // Staggered starts: some calls race to create the file, others find it mid-creation.
    for (let round = 0; round < 20; round += 1) {
      const directory = path.join(dataDir, `round-${round}`);
      const secrets = await Promise.all(
        Array.from({ length: 16 }, async (_, index) => {
          await new Promise((resolve) => setTimeout(resolve, index % 4));
          return loadOrCreateSigningSecret(directory);
        }),
      );
      expect(new Set(secrets).size).toBe(1);
      expect(await readdir(directory)).toEqual([SIGNING_SECRET_FILE]);
      expect((await stat(path.join(directory, SIGNING_SECRET_FILE))).mode & 0o777).toBe(0o600);
    }
  });

  it('creates a missing data directory', async () => {
    const nested = path.join(dataDir, 'a', 'b');
    expect(await loadOrCreateSigningSecret(nested)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('uses an operator-provided file as it is (trimmed)', async () => {
    const provided = 'x'.repeat(40);
    await writeFile(path.join(dataDir, SIGNING_SECRET_FILE), `${provided}\n`, { mode: 0o600 });
    expect(await loadOrCreateSigningSecret(dataDir)).toBe(provided);
  });

  it('refuses a file too short to be a secret, without quoting it', async () => {
    await writeFile(path.join(dataDir, SIGNING_SECRET_FILE), 'tooshort-secret', { mode: 0o600 });
    const attempt = loadOrCreateSigningSecret(dataDir);
    await expect(attempt).rejects.toThrow(/does not hold a usable signing secret/);
    await expect(attempt).rejects.not.toThrow(/tooshort-secret/);
  });
});
