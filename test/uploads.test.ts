import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { rawRequest } from './support/http.js';
import { readJson } from './support/json.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { PNG_1X1, pdfOfSize, upload } from './support/upload.js';
import { officeEntries, writeZip } from './support/upload-samples.js';

const MiB = 1024 * 1024;
const MANAGED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

let service: TestService;
/** Published sandbox flag on; the operator switch is on in this service. */
let managed: AgentFixture;
/** Default config: sandboxes off. */
let plain: AgentFixture;

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
  managed = await createAgentFixture(service.database.db, { published: MANAGED });
  plain = await createAgentFixture(service.database.db);
});
afterAll(() => service.close());

async function storedRows() {
  return service.database.db.selectFrom('stored_files').selectAll().orderBy('created_at').execute();
}

async function storedObjects(): Promise<string[]> {
  const root = path.join(service.config.dataDir, 'files', 'uploads');
  return readdir(root).catch(() => []);
}

async function tempFiles(): Promise<string[]> {
  return readdir(path.join(service.config.dataDir, 'tmp')).catch(() => []);
}

/**
 * A multipart upload (boundary `bound`) sent chunk by chunk (chunked encoding), as the plain agent; status -1
 * when the service closed the connection before answering (it refuses without reading the rest).
 */
function chunkedUpload(chunks: Array<string | Buffer>) {
  return rawRequest(`${service.url}/v1/uploads`, {
    method: 'POST',
    headers: [
      ...Object.entries(agentHeaders(plain.key)),
      ['Content-Type', 'multipart/form-data; boundary=bound'],
    ] as Array<[string, string]>,
    chunks,
  }).catch((error: Error) => ({ status: -1, headers: {}, body: error.message }));
}

describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/uploads',
    permission: 'write',
    headers: { 'Content-Type': 'multipart/form-data; boundary=x' },
    body: '--x\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nnot really\r\n--x--\r\n',
    effects: async () => [await storedRows(), await storedObjects()],
  },
  () => ({ service, fixture: plain }),
);

describe('POST /v1/uploads', () => {
  it('stores a PNG, registers its provenance and answers 201 with a signed URL', async () => {
    const response = await upload(service, plain.key, { bytes: PNG_1X1, filename: 'pixel.png', type: 'image/png' });
    expect(response.status).toBe(201);
    const body = await readJson(response);
    expect(body).toEqual({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\/uploads\/[0-9a-f]{32}\?/),
      storagePath: expect.stringMatching(/^uploads\/[0-9a-f]{32}$/),
      filename: 'pixel.png',
      mediaType: 'image/png',
      size: PNG_1X1.byteLength,
    });
    const row = (await storedRows()).find((candidate) => candidate.storage_path === body.storagePath);
    expect(row).toMatchObject({
      tenant_id: plain.tenantId,
      agent_id: plain.agentId,
      user_id: 'user-1',
      kind: 'upload',
      media_type: 'image/png',
      size: PNG_1X1.byteLength,
      sha256: createHash('sha256').update(PNG_1X1).digest('hex'),
    });
    const download = await fetch(body.url);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(PNG_1X1);
  });

  it('lets the bytes decide: a PNG sent as photo.jpg with a PDF MIME is stored as image/png', async () => {
    const response = await upload(service, plain.key, {
      bytes: PNG_1X1,
      filename: 'photo.jpg',
      type: 'application/pdf',
    });
    expect(response.status).toBe(201);
    expect(await readJson(response)).toMatchObject({ mediaType: 'image/png', filename: 'photo.jpg' });
  });

  it('accepts exactly 5 MiB and refuses 5 MiB + 1 byte (413 naming the limit, nothing stored)', async () => {
    const accepted = await upload(service, plain.key, { bytes: pdfOfSize(5 * MiB), filename: 'five.pdf' });
    expect(accepted.status).toBe(201);
    expect((await readJson(accepted)).size).toBe(5 * MiB);

    const rowsBefore = await storedRows();
    const objectsBefore = await storedObjects();
    const refused = await upload(service, plain.key, { bytes: pdfOfSize(5 * MiB + 1), filename: 'over.pdf' });
    expect(refused.status).toBe(413);
    const problem = await readJson(refused);
    expect(problem.code).toBe('FILE_TOO_LARGE');
    expect(problem.detail).toContain('5 MiB');
    expect(await storedRows()).toEqual(rowsBefore);
    expect(await storedObjects()).toEqual(objectsBefore);
    expect(await tempFiles()).toEqual([]);
  });

  it('refuses an over-limit chunked body early, reading at most the cap plus framing slack', async () => {
    const rowsBefore = await storedRows();
    const chunk = Buffer.alloc(256 * 1024, 0x41);
    const head = Buffer.from(
      '--bound\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n',
    );
    // 40 MiB offered; the cap is 5 MiB.
    const response = await chunkedUpload([head, ...Array.from({ length: 160 }, () => chunk)]);
    expect([413, -1]).toContain(response.status);
    if (response.status === 413) expect(JSON.parse(response.body).code).toBe('FILE_TOO_LARGE');
    const refusal = service.logs
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === 'upload refused: too large');
    expect(refusal).toBeDefined();
    expect(refusal.bytesRead).toBeLessThanOrEqual(5 * MiB + 64 * 1024 + chunk.length);
    expect(await storedRows()).toEqual(rowsBefore);
    expect(await tempFiles()).toEqual([]);
  });

  it('cleans up after a client that disconnects mid-upload, and keeps serving', async () => {
    const socket = net.connect(Number(new URL(service.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const headers = [
      'POST /v1/uploads HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${plain.key}`,
      'X-Chat-User: user-1',
      'Content-Type: multipart/form-data; boundary=bound',
      'Transfer-Encoding: chunked',
      '',
      '',
    ].join('\r\n');
    const part = '--bound\r\nContent-Disposition: form-data; name="file"; filename="half.pdf"\r\n\r\n%PDF-1.4\n';
    const chunk = `${part}${'A'.repeat(512 * 1024)}`;
    socket.write(`${headers}${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await tempFiles()).toEqual([]);
    const healthy = await upload(service, plain.key, { bytes: PNG_1X1, filename: 'after.png' });
    expect(healthy.status).toBe(201);
  });

  it.each(['File', 'FILE', 'upload', ''])(
    'answers a file in the field "%s" with 400 naming it, however the body arrives, and keeps serving',
    async (field) => {
      const rowsBefore = await storedRows();
      const part = `--bound\r\nContent-Disposition: form-data; name="${field}"; filename="a.pdf"\r\n\r\n%PDF-1.4\n`;
      // Split across many writes, so the wrong part is still streaming when the refusal comes.
      const response = await chunkedUpload([
        part,
        ...Array.from({ length: 40 }, () => 'A'.repeat(64 * 1024)),
        '\r\n--bound--\r\n',
      ]);
      expect([400, -1]).toContain(response.status);
      if (response.status === 400) {
        const problem = JSON.parse(response.body);
        expect(problem.code).toBe('INVALID_MULTIPART');
        const named = field ? JSON.stringify(field) : 'a field without a name';
        expect(problem.detail).toBe(`Send the file in the "file" field (this form has a file in ${named}).`);
      }
      expect(await storedRows()).toEqual(rowsBefore);
      expect(await tempFiles()).toEqual([]);
      expect((await upload(service, plain.key, { bytes: PNG_1X1, filename: 'after.png' })).status).toBe(201);
    },
  );

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const response = await rawRequest(`${service.url}/v1/uploads`, {
      method: 'POST',
      headers: [
        ...Object.entries(agentHeaders(plain.key)),
        ['Content-Type', 'multipart/form-data; boundary=bound'],
        ['Content-Length', String(50 * MiB)],
      ] as Array<[string, string]>,
      body: '--bound\r\n',
    }).catch((error: Error) => ({ status: -1, headers: {}, body: error.message }));
    expect(response.status).toBe(413);
  });

  it.each([
    ['HTML named x.png', '<!doctype html><html><body><script>alert(1)</script></body></html>', 'x.png', 'text/html'],
    ['SVG', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'logo.svg', 'image/svg+xml'],
    ['a CSV without the managed gate', 'a,b\n1,2\n', 'data.csv', 'text/csv'],
    ['a Windows executable named .pdf', `MZ${'\u0000'.repeat(200)}`, 'invoice.pdf', null],
  ])(
    'refuses %s (415 naming what was detected and what is allowed), storing nothing',
    async (_name, bytes, filename, detected) => {
      const rowsBefore = await storedRows();
      const response = await upload(service, plain.key, { bytes, filename, type: 'image/png' });
      expect(response.status).toBe(415);
      const problem = await readJson(response);
      expect(problem.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      if (detected) expect(problem.detail).toContain(detected);
      expect(problem.detail).toContain('allowed: image/png');
      expect(await storedRows()).toEqual(rowsBefore);
      expect(await tempFiles()).toEqual([]);
    },
  );

  it.each([
    ['CRLF', 'evil\r\nX-Injected: 1.png'],
    ['a right-to-left override', 'invoice\u202Efdp.png'],
    ['path parts', '../../etc/passwd.png'],
  ])('sanitizes a filename with %s before storing it', async (_name, filename) => {
    const response = await upload(service, plain.key, { bytes: PNG_1X1, filename });
    expect(response.status).toBe(201);
    const body = await readJson(response);
    expect([...body.filename].some((character) => '\r\n\u0000\u202e/\\'.includes(character))).toBe(false);
    expect(body.filename.endsWith('.png')).toBe(true);
    const row = (await storedRows()).find((candidate) => candidate.storage_path === body.storagePath);
    expect(row?.filename).toBe(body.filename);
    const download = await fetch(body.url);
    expect(download.headers.get('content-disposition')).not.toMatch(/[\r\n]/);
  });

  it('refuses a part header carrying a NUL byte as malformed multipart, storing nothing', async () => {
    const rowsBefore = await storedRows();
    const response = await upload(service, plain.key, { bytes: PNG_1X1, filename: 'report\u0000.exe.png' });
    expect(response.status).toBe(400);
    expect((await readJson(response)).code).toBe('INVALID_MULTIPART');
    expect(await storedRows()).toEqual(rowsBefore);
  });

  it('refuses malformed multipart (400) and a missing file field (400 naming it)', async () => {
    const malformed = await service.fetch('/v1/uploads', {
      method: 'POST',
      headers: { ...agentHeaders(plain.key), 'Content-Type': 'multipart/form-data' },
      body: 'no boundary',
    });
    expect(malformed.status).toBe(400);
    expect((await readJson(malformed)).code).toBe('INVALID_MULTIPART');

    const form = new FormData();
    form.set('note', 'hello');
    const missing = await service.fetch('/v1/uploads', {
      method: 'POST',
      headers: agentHeaders(plain.key),
      body: form,
    });
    expect(missing.status).toBe(400);
    expect((await readJson(missing)).errors).toEqual([{ path: 'file', message: 'is required' }]);
    expect(await tempFiles()).toEqual([]);
  });

  it('accepts the managed document set only while the gate is open', async () => {
    const csv = { bytes: 'name,score\nada,3\n', filename: 'scores.csv', type: 'text/csv' };
    expect((await upload(service, plain.key, csv)).status).toBe(415);
    const accepted = await upload(service, managed.key, csv);
    expect(accepted.status).toBe(201);
    expect(await readJson(accepted)).toMatchObject({ mediaType: 'text/csv', filename: 'scores.csv' });
    // The gate needs a signed-in user.
    expect((await upload(service, managed.key, csv, 'anon:visitor')).status).toBe(415);
  });
});

describe('registration failure', () => {
  it('removes the stored object again, leaving no orphan and no row', async () => {
    const isolated = await startTestService();
    try {
      const fixture = await createAgentFixture(isolated.database.db);
      // Make the registry refuse every insert, for real, inside the database.
      if (isolated.database.dialect === 'sqlite') {
        await sql`create trigger refuse_files before insert on stored_files begin select raise(abort, 'registry refuses'); end`.execute(
          isolated.database.db,
        );
      } else {
        await sql`create function refuse_files() returns trigger language plpgsql as $$ begin raise exception 'registry refuses'; end $$`.execute(
          isolated.database.db,
        );
        await sql`create trigger refuse_files before insert on stored_files for each row execute function refuse_files()`.execute(
          isolated.database.db,
        );
      }
      const response = await upload(isolated, fixture.key, { bytes: PNG_1X1, filename: 'orphan.png' });
      expect(response.status).toBe(500);
      expect(JSON.stringify(await readJson(response))).not.toContain('registry refuses');
      const objects = await readdir(path.join(isolated.config.dataDir, 'files', 'uploads')).catch(() => []);
      expect(objects).toEqual([]);
      expect(await isolated.database.db.selectFrom('stored_files').selectAll().execute()).toEqual([]);
      expect(await readdir(path.join(isolated.config.dataDir, 'tmp')).catch(() => [])).toEqual([]);
    } finally {
      await isolated.close();
    }
  });
});

describe('Office documents (managed gate open)', () => {
  const XLSM_MAIN = 'application/vnd.ms-excel.sheet.macroEnabled.main+xml';

  async function officeFile(
    kind: 'docx' | 'xlsx' | 'pptx',
    variant: Parameters<typeof officeEntries>[1] = {},
  ): Promise<Uint8Array> {
    const directory = await mkdtemp(path.join(tmpdir(), 'mordn-office-'));
    try {
      return new Uint8Array(
        await readFile(await writeZip(path.join(directory, `file.${kind}`), officeEntries(kind, variant))),
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }

  it.each(['docx', 'xlsx', 'pptx'] as const)('accepts a valid .%s with its canonical type', async (kind) => {
    const response = await upload(service, managed.key, { bytes: await officeFile(kind), filename: `report.${kind}` });
    expect(response.status).toBe(201);
    expect((await readJson(response)).mediaType).toMatch(/^application\/vnd\.openxmlformats-officedocument\./);
  });

  it('refuses an .xlsm renamed .xlsx, naming the macro-enabled type', async () => {
    const rowsBefore = await storedRows();
    const bytes = await officeFile('xlsx', { mainContentType: XLSM_MAIN });
    const response = await upload(service, managed.key, {
      bytes,
      filename: 'budget.xlsx',
      type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    });
    expect(response.status).toBe(415);
    expect((await readJson(response)).detail).toContain('application/vnd.ms-excel.sheet.macroEnabled.12');
    expect(await storedRows()).toEqual(rowsBefore);
  });

  it('refuses a docx zip bomb within bounded time and memory', async () => {
    // 128 MiB of zeros (twice the inflation budget) deflate to well under the 10 MiB upload cap.
    const bytes = await officeFile('docx', { parts: { 'word/media/image1.bin': { zeros: 128 * 1024 * 1024 } } });
    expect(bytes.byteLength).toBeLessThan(10 * MiB);
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    const response = await upload(service, managed.key, { bytes, filename: 'bomb.docx' });
    const elapsed = performance.now() - started;
    expect(response.status).toBe(415);
    expect(elapsed).toBeLessThan(5_000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * MiB);
    expect(await tempFiles()).toEqual([]);
  });
});
