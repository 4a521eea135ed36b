import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import {
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, upload } from './support/upload.js';

const MANAGED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const USER = 'name-keeper';

/** Names that must come back exactly as sent, with bytes each is accepted as and its ASCII fallback. */
const NAMES: Array<{ name: string; bytes: Uint8Array | string; fallback: string }> = [
  { name: 'résumé.png', bytes: PNG_1X1, fallback: 'resume.png' },
  { name: '报告.csv', bytes: '地区,合计\n北,3\n', fallback: '__.csv' },
  { name: '👩\u200D💻 notes 🎉.md', bytes: '# Notes\n', fallback: '_ notes _.md' },
  { name: 'Ünïcödé – naïve café.txt', bytes: 'plain words\n', fallback: 'Unicode _ naive cafe.txt' },
];

/** A multipart body whose only part names the file in RFC 5987 `filename*` (with an ASCII `filename` beside it). */
function extendedNameUpload(service: TestService, key: string, name: string, bytes: Uint8Array | string) {
  const content = typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes);
  const body = Buffer.concat([
    Buffer.from(
      '--bound\r\n' +
        `Content-Disposition: form-data; name="file"; filename="fallback.bin"; filename*=UTF-8''${encodeURIComponent(name)}\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    content,
    Buffer.from('\r\n--bound--\r\n'),
  ]);
  return service.fetch('/v1/uploads', {
    method: 'POST',
    headers: { ...agentHeaders(key, USER), 'Content-Type': 'multipart/form-data; boundary=bound' },
    body,
  });
}

/** The `filename*` of a Content-Disposition header, decoded as an RFC 6266 user agent reads it. */
function extendedName(disposition: string | null): string | undefined {
  const encoded = /; filename\*=UTF-8''([^;\s]*)/.exec(disposition ?? '')?.[1];
  return encoded === undefined ? undefined : decodeURIComponent(encoded);
}

function fallbackName(disposition: string | null): string | undefined {
  return /^attachment; filename="([^"]*)"/.exec(disposition ?? '')?.[1];
}

const UPLOAD_WAYS = [
  ['raw UTF-8 in filename= (as browsers send it)', 'raw'],
  ["RFC 5987 filename*=UTF-8''…", 'extended'],
] as const;

interface StorageUnderTest {
  environment: () => Record<string, string>;
  setUp?: () => Promise<void>;
  tearDown?: () => Promise<void>;
}

let s3: TestS3Server | undefined;
const STORAGES: Array<[string, StorageUnderTest]> = [
  ['fs', { environment: () => ({}) }],
  [
    's3',
    {
      async setUp() {
        s3 = await startS3Server();
        // The S3 client takes its credentials from the standard AWS chain, i.e. the environment.
        for (const [name, value] of Object.entries(s3CredentialsEnvironment(s3))) vi.stubEnv(name, value);
      },
      environment: () => (s3 ? s3StorageEnvironment(s3) : {}),
      async tearDown() {
        vi.unstubAllEnvs();
        await s3?.close();
      },
    },
  ],
];

describe.each(STORAGES)('UTF-8 file names on %s storage', (_kind, storage) => {
  let service: TestService;
  let fixture: AgentFixture;

  beforeAll(async () => {
    await storage.setUp?.();
    service = await startTestService({
      environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000', ...storage.environment() },
    });
    fixture = await createAgentFixture(service.database.db, { published: MANAGED });
  });
  afterAll(async () => {
    await service?.close();
    await storage.tearDown?.();
  });

  describe.each(UPLOAD_WAYS)('sent as %s', (_way, way) => {
    it.each(NAMES)(
      'keeps $name exactly: stored, re-signed one by one and in a batch, downloaded under it',
      async ({ name, bytes, fallback }) => {
        const response =
          way === 'raw'
            ? await upload(service, fixture.key, { bytes, filename: name }, USER)
            : await extendedNameUpload(service, fixture.key, name, bytes);
        expect(response.status).toBe(201);
        const uploaded = await readJson(response);
        expect(uploaded.filename).toBe(name);

        const row = await service.database.db
          .selectFrom('stored_files')
          .select('filename')
          .where('storage_path', '=', uploaded.storagePath)
          .executeTakeFirstOrThrow();
        expect(row.filename).toBe(name);

        const resign = (body: unknown) =>
          service.fetch('/v1/uploads/resign', {
            method: 'POST',
            headers: { ...agentHeaders(fixture.key, USER), 'Content-Type': 'application/json' },
            body: JSON.stringify(body),
          });
        const single = await readJson(await resign({ storagePath: uploaded.storagePath }));
        const batch = await readJson(await resign({ storagePaths: [uploaded.storagePath] }));
        expect(batch.results).toEqual([{ storagePath: uploaded.storagePath, url: expect.any(String) }]);

        for (const url of [uploaded.url, single.url, batch.results[0].url]) {
          const download = await fetch(url);
          expect(download.status).toBe(200);
          const disposition = download.headers.get('content-disposition');
          expect(disposition).toMatch(/^attachment; filename="[\x20-\x7e]+"; filename\*=UTF-8''[\x21-\x7e]+$/);
          expect(extendedName(disposition)).toBe(name);
          expect(fallbackName(disposition)).toBe(fallback);
          expect(Buffer.from(await download.arrayBuffer())).toEqual(Buffer.from(bytes));
        }
      },
    );
  });

  it('stores a name that is not UTF-8 (latin1 bytes) with replacement characters rather than guessing', async () => {
    const body = Buffer.concat([
      Buffer.from('--bound\r\nContent-Disposition: form-data; name="file"; filename="r'),
      Buffer.from([0xe9]),
      Buffer.from('sum'),
      Buffer.from([0xe9]),
      Buffer.from('.png"\r\nContent-Type: image/png\r\n\r\n'),
      Buffer.from(PNG_1X1),
      Buffer.from('\r\n--bound--\r\n'),
    ]);
    const response = await service.fetch('/v1/uploads', {
      method: 'POST',
      headers: { ...agentHeaders(fixture.key, USER), 'Content-Type': 'multipart/form-data; boundary=bound' },
      body,
    });
    expect(response.status).toBe(201);
    expect((await readJson(response)).filename).toBe('r\uFFFDsum\uFFFD.png');
  });

  describe('imported into the workspace', () => {
    let client: Client;
    beforeAll(async () => {
      client = await connectSdkClient(service, fixture.key, USER);
    });
    afterAll(() => client?.close());

    it.each(NAMES)('keeps $name as the file name in uploads/', async ({ name, bytes }) => {
      const uploaded = await readJson(await upload(service, fixture.key, { bytes, filename: name }, USER));
      expect(uploaded.filename).toBe(name);
      const imported = await callTool(client, 'sandbox_import_file', { storagePath: uploaded.storagePath });
      expect(imported.isError).toBe(false);
      expect(imported.value.filename).toBe(name);
      expect(imported.value.path).toBe(`uploads/${name}`);

      const listed = await callTool(client, 'sandbox_list_files', { path: 'uploads' });
      expect(listed.value.entries.map((entry: { name: string }) => entry.name)).toContain(name);
      const ls = await callTool(client, 'sandbox_exec', { command: 'ls uploads' });
      expect(ls.value.stdout.split('\n')).toContain(name);
    });
  });
});
