import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { type AgentFixture, createAgentFixture } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/service.js';
import { toolEnvironment } from './support/run-command.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let service: TestService;
let fixture: AgentFixture;
const exampleDir = inject('exampleDir');

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
  fixture = await createAgentFixture(service.database.db, { published: ENABLED });
});
afterAll(() => service.close());

describe('the packed library, as installed in the Next.js example', () => {
  it('is the tarball, not a link to the source tree, and resolves every export to dist/', async () => {
    const installed = path.join(exampleDir, 'node_modules', 'mordn');
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8'));
    const lock = JSON.parse(await readFile(path.join(exampleDir, 'package-lock.json'), 'utf8'));
    expect(lock.packages['node_modules/mordn']).toMatchObject({
      resolved: 'file:vendor/mordn.tgz',
      integrity: expect.stringMatching(/^sha512-/),
    });
    expect(lock.packages['node_modules/mordn'].link).toBeUndefined();
    expect((await lstat(installed)).isSymbolicLink()).toBe(false);
    expect(manifest.version).toBe(JSON.parse(await readFile(path.join(packageRoot(), 'package.json'), 'utf8')).version);
    // Only what `files` ships: no sources, no tests.
    expect(existsSync(path.join(installed, 'src', 'chat'))).toBe(false);
    expect(existsSync(path.join(installed, 'test'))).toBe(false);
    expect(existsSync(path.join(installed, 'src', 'console'))).toBe(false);
    // The web console ships built: its page and assets, nothing fetched from elsewhere at run time.
    expect(existsSync(path.join(installed, 'dist', 'console', 'index.html'))).toBe(true);

    const require = createRequire(path.join(exampleDir, 'package.json'));
    for (const entry of ['mordn/server', 'mordn/server/hosted', 'mordn/app']) {
      expect(require.resolve(entry)).toMatch(new RegExp(`^${installed}/dist/src/exports/`));
    }
  });

  it('agrees across mordn/server and mordn/server/hosted on the artifact capability', async () => {
    const script = await readFile(new URL('fixtures/cross-entry-check.mjs', import.meta.url), 'utf8');
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '--eval', script], {
      cwd: exampleDir,
      env: toolEnvironment({ MORDN_API_URL: service.deps.selfBaseUrl as string, MORDN_CHAT_KEY: fixture.key }),
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1) as string);

    // A carrier minted by mordn/server/hosted becomes a file card in mordn/server's handler…
    expect(result.genuine.status).toBe(200);
    expect(result.genuine.toolOutputs).toBe(2);
    expect(result.genuine.files).toEqual([
      {
        type: 'file',
        url: expect.stringContaining('/v1/files/artifacts/'),
        mediaType: 'text/markdown',
        providerMetadata: {
          mordn: {
            sandboxFile: { filename: 'Report.md', size: 9, storagePath: expect.stringMatching(/^artifacts\//) },
          },
        },
      },
    ]);
    const download = await fetch(result.genuine.files[0].url);
    expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(await download.text()).toBe('# Report\n');

    // …and a look-alike of the same shape and values, not minted, does not.
    expect(result.minted).toEqual([true]);
    expect(result.lookAlikes).toEqual([false]);
    expect(result.forged.status).toBe(200);
    expect(result.forged.toolOutputs).toBe(2);
    expect(result.forged.files).toEqual([]);
  });
});
