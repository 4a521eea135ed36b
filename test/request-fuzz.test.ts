import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { createAgentFixture } from './support/fixtures.js';
import { pollUntil } from './support/poll.js';
import { type MordnProcess, spawnMordn } from './support/process.js';
import { type FuzzCase, type FuzzRun, frameRandomly, runRawCases } from './support/raw-http-fuzz.js';
import { type SeededRandom, seededRandom } from './support/seeded-random.js';
import { PNG_1X1, pdfOfSize } from './support/upload.js';

/**
 * Fuzzes the request bodies of a real service process over raw TCP. Uploads: random field names,
 * several parts, odd headers and boundaries, limits hit mid-part. JSON routes (MCP, chat, resign,
 * delete): cut, padded and garbled bodies. Both: bodies split across many writes, truncated bodies
 * and clients that vanish. The process must survive every request, never answer 5xx, log no error,
 * and leave nothing behind: no temporary file, and exactly one row and one object per upload 201.
 *
 * Replay a failure with `MORDN_FUZZ_SEED=<seed>`; `MORDN_FUZZ_REQUESTS` sets the upload count
 * (the JSON routes get half as many).
 */
const SEED = Number(process.env.MORDN_FUZZ_SEED ?? 0x6d6f72);
const REQUESTS = Number(process.env.MORDN_FUZZ_REQUESTS ?? 2500);
const CONCURRENCY = 12;
/** The upload cap of the fuzzed service: small, so limits are hit mid-part cheaply. */
const UPLOAD_MAX = 64 * 1024;

const FIELD_NAMES = ['file', 'file', 'file', 'File', 'FILE', 'files', 'file[]', '', 'fïle', 'a"b', 'x'.repeat(300)];
const FILENAMES = [
  'a.png',
  'doc.pdf',
  'résumé.png',
  '报告.pdf',
  '😀.png',
  '',
  '"q".png',
  '../../x.pdf',
  'y'.repeat(400),
];
const PART_TYPES = ['image/png', 'application/pdf', 'application/octet-stream', 'text/plain', 'text/html', ''];

function filePayload(random: SeededRandom): { bytes: Buffer; label: string } {
  switch (random.integer(0, 5)) {
    case 0:
      return { bytes: Buffer.from(PNG_1X1), label: 'png' };
    case 1:
      return { bytes: Buffer.from(pdfOfSize(random.integer(32, 4096))), label: 'pdf' };
    case 2: {
      const size = random.integer(UPLOAD_MAX - 8, UPLOAD_MAX + 4 * 1024);
      return { bytes: Buffer.from(pdfOfSize(size)), label: `pdf ${size} B` };
    }
    case 3: {
      const size = random.integer(0, 3 * UPLOAD_MAX);
      return { bytes: random.bytes(size), label: `random ${size} B` };
    }
    case 4:
      return { bytes: Buffer.from('name,score\nada,3\n'), label: 'csv' };
    default:
      return { bytes: Buffer.from('<html><script>1</script></html>'), label: 'html' };
  }
}

function dispositionFilename(random: SeededRandom): string {
  const name = random.pick(FILENAMES);
  switch (random.integer(0, 3)) {
    case 0:
      return '';
    case 1:
      return `; filename*=UTF-8''${encodeURIComponent(name)}`;
    default:
      return `; filename="${name}"`;
  }
}

function part(random: SeededRandom, boundary: string): { bytes: Buffer; label: string } {
  const name = random.pick(FIELD_NAMES);
  const kind = random.pick(['file', 'file', 'file', 'field', 'octet', 'bad-header', 'many-headers'] as const);
  const lines = [`--${boundary}`];
  let payload = filePayload(random);
  if (kind === 'field') {
    lines.push(`Content-Disposition: form-data; name="${name}"`);
    payload = { bytes: Buffer.from('x'.repeat(random.integer(0, 10_000))), label: 'field' };
  } else if (kind === 'octet') {
    lines.push(`Content-Disposition: form-data; name="${name}"`, 'Content-Type: application/octet-stream');
  } else if (kind === 'bad-header') {
    lines.push(random.pick(['Content-Disposition form-data', 'X: \u0000', ': empty', 'Content-Disposition: ;;;']));
  } else {
    lines.push(`Content-Disposition: form-data; name="${name}"${dispositionFilename(random)}`);
    const type = random.pick(PART_TYPES);
    if (type) lines.push(`Content-Type: ${type}`);
    if (kind === 'many-headers') for (let index = 0; index < 40; index++) lines.push(`X-Extra-${index}: ${index}`);
  }
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8');
  return {
    bytes: Buffer.concat([head, payload.bytes, Buffer.from('\r\n')]),
    label: `${kind}:${name}:${payload.label}`,
  };
}

function contentType(random: SeededRandom, boundary: string): string | undefined {
  switch (random.integer(0, 9)) {
    case 0:
      return 'multipart/form-data';
    case 1:
      return `multipart/form-data; boundary="${boundary}"`;
    case 2:
      return 'multipart/form-data; boundary=other';
    case 3:
      return random.pick(['application/json', 'text/plain', undefined]);
    default:
      return `multipart/form-data; boundary=${boundary}`;
  }
}

/** A multipart upload: up to four random parts, usually closed, sometimes with a preamble. */
function uploadCase(random: SeededRandom, key: string): FuzzCase {
  const boundary = random.pick(['b', `x${random.integer(0, 1e9)}`, `----WebKitFormBoundary${random.integer(0, 1e9)}`]);
  const parts = Array.from({ length: random.integer(0, 4) }, () => part(random, boundary));
  const closing = random.chance(0.85) ? `--${boundary}--\r\n` : '';
  const preamble = random.chance(0.1) ? 'preamble junk\r\n' : '';
  const body = Buffer.concat([Buffer.from(preamble), ...parts.map((entry) => entry.bytes), Buffer.from(closing)]);
  const type = contentType(random, boundary);
  const framed = frameRandomly(random, {
    method: 'POST',
    path: '/v1/uploads',
    headers: [
      `Authorization: Bearer ${key}`,
      `X-Chat-User: ${random.chance(0.97) ? 'fuzz-user' : ''}`,
      ...(type === undefined ? [] : [`Content-Type: ${type}`]),
    ],
    body,
  });
  const described = `type=${type ?? '(none)'} parts=[${parts.map((entry) => entry.label).join(', ')}] ${closing ? 'closed' : 'unclosed'}`;
  return { ...framed, summary: `${framed.summary} ${described}` };
}

const STORAGE_PATH = `uploads/${'0'.repeat(32)}`;
/** A well-formed body for each JSON route; the fuzz sends them whole, cut, padded or garbled. */
const JSON_ROUTES: ReadonlyArray<{ method: string; path: string; sample: (random: SeededRandom) => unknown }> = [
  { method: 'POST', path: '/v1/uploads/resign', sample: () => ({ storagePath: STORAGE_PATH }) },
  { method: 'POST', path: '/v1/uploads/resign', sample: () => ({ storagePaths: [STORAGE_PATH, 'uploads/x'] }) },
  { method: 'DELETE', path: '/v1/uploads', sample: () => ({ storagePaths: [STORAGE_PATH] }) },
  {
    method: 'POST',
    path: '/v1/sandbox/mcp',
    sample: (random) =>
      random.pick([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
        },
      ]),
  },
  {
    method: 'POST',
    path: '/v1/chat',
    // Never a whole valid turn: the fuzz is about reading bodies, not about calling the model.
    sample: (random) => ({
      id: `chat-${random.integer(0, 1e6)}`,
      messages: [{ id: 'm1', role: random.pick(['user', 'system', 'tool']), parts: [{ type: 'text', text: 'hi' }] }],
      trigger: random.pick(['submit-message', 'regenerate-message', 'nonsense']),
    }),
  },
];

function jsonCase(random: SeededRandom, key: string): FuzzCase {
  const route = random.pick(JSON_ROUTES);
  let body: Buffer = Buffer.from(JSON.stringify(route.sample(random)));
  const mutation = random.pick(['whole', 'whole', 'cut', 'garble', 'pad', 'random'] as const);
  if (mutation === 'cut') body = body.subarray(0, random.integer(0, body.length - 1));
  if (mutation === 'garble') {
    const at = random.integer(0, body.length);
    body = Buffer.concat([body.subarray(0, at), random.bytes(random.integer(1, 16)), body.subarray(at)]);
  }
  if (mutation === 'pad') body = Buffer.concat([body, Buffer.alloc(random.integer(1, 100 * 1024), 0x20)]);
  if (mutation === 'random') body = random.bytes(random.integer(0, 4096));
  const type = random.pick(['application/json', 'application/json', 'application/json', 'text/plain', undefined]);
  const framed = frameRandomly(random, {
    method: route.method,
    path: route.path,
    headers: [
      `Authorization: Bearer ${key}`,
      'X-Chat-User: fuzz-user',
      'Accept: application/json, text/event-stream',
      ...(type === undefined ? [] : [`Content-Type: ${type}`]),
    ],
    body,
  });
  return { ...framed, summary: `${framed.summary} type=${type ?? '(none)'} body=${mutation}` };
}

/** A rejected upload as a browser or server-side client sends it, with the refusal it must get. */
interface RefusedUpload {
  form: FormData;
  expected: number;
  summary: string;
}

/** The largest body a refused upload sends: the lingering close reads at least this much. */
const REFUSED_BODY_MAX = 1024 * 1024 - 4 * 1024;

function refusedUpload(random: SeededRandom): RefusedUpload {
  const form = new FormData();
  // Within the cap, so the refusal is the field or the type, not the size.
  const size = random.pick([63, 500, 4096, 60_000, random.integer(0, UPLOAD_MAX)]);
  const kind = random.pick(['field', 'type', 'size', 'two'] as const);
  if (kind === 'field') {
    const name = random.pick(FIELD_NAMES.filter((field) => field !== 'file'));
    form.append(name, new Blob([random.bytes(size)], { type: 'image/png' }), 'a.png');
    return { form, expected: 400, summary: `field ${JSON.stringify(name)}, ${size} B` };
  }
  if (kind === 'type') {
    form.append('file', new Blob([Buffer.alloc(size, 0x3c)], { type: 'text/html' }), 'a.html');
    return { form, expected: 415, summary: `html, ${size} B` };
  }
  if (kind === 'size') {
    const bytes = random.integer(UPLOAD_MAX + 1, REFUSED_BODY_MAX);
    form.append('file', new Blob([pdfOfSize(bytes)], { type: 'application/pdf' }), 'big.pdf');
    return { form, expected: 413, summary: `pdf ${bytes} B over the ${UPLOAD_MAX} B cap` };
  }
  form.append('file', new Blob([PNG_1X1], { type: 'image/png' }), 'a.png');
  form.append('file', new Blob([random.bytes(size)], { type: 'image/png' }), 'b.png');
  return { form, expected: 400, summary: 'two files' };
}

let target: TestDatabaseTarget;
let service: MordnProcess;
let url: string;
let key: string;

beforeAll(async () => {
  target = await createTestDatabaseTarget();
  const database = await target.open();
  key = (await createAgentFixture(database.db)).key;
  await database.close();
  service = spawnMordn(['serve'], {
    ...target.environment,
    PORT: '0',
    MORDN_UPLOAD_MAX_BYTES: String(UPLOAD_MAX),
    // A model that is never reached (nothing listens on the discard port): chat reads its body first.
    MORDN_MODEL: 'openai-compatible:fuzz',
    MORDN_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
    MORDN_LOG_LEVEL: 'info',
  });
  url = String((await service.waitForLog((line) => line.msg === 'mordn listening', 60_000)).url);
}, 90_000);

afterAll(async () => {
  if (service && service.child.exitCode === null) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  await target?.destroy();
});

/** Runs the cases against the service and checks it survived them, healthy and quiet. */
async function fuzz(cases: FuzzCase[]): Promise<FuzzRun> {
  const run = await runRawCases(Number(new URL(url).port), cases, {
    concurrency: CONCURRENCY,
    alive: () => service.child.exitCode === null,
  });
  const crash = service.stderr.join('');
  expect(service.child.exitCode, `the service exited; stderr: ${crash}`).toBeNull();
  expect(crash).toBe('');
  expect(run.failures.slice(0, 20)).toEqual([]);
  // Refusals and vanished clients are the caller's doing: no error-level log line for any of them.
  expect(service.stdout.filter((line) => /"level":(50|60)/.test(line)).slice(0, 5)).toEqual([]);
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  return run;
}

describe(`request fuzz (seed ${SEED})`, () => {
  it(`${REQUESTS} uploads: survives every one, never answers 5xx, keeps exactly what it accepted`, {
    timeout: 240_000,
  }, async () => {
    const random = seededRandom(SEED);
    const { statuses } = await fuzz(Array.from({ length: REQUESTS }, () => uploadCase(random, key)));
    // The fuzz reached every kind of answer, not just one refusal.
    for (const status of [201, 400, 413, 415]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);

    const tempDir = path.join(target.dataDir, 'tmp');
    const leftovers = await pollUntil(
      () => readdir(tempDir),
      (files) => files.length === 0,
      { timeoutMs: 5_000 },
    );
    expect(leftovers).toEqual([]);
    const database = await target.open();
    try {
      const rows = await database.db.selectFrom('stored_files').select('storage_path').execute();
      const objects = await readdir(path.join(target.dataDir, 'files', 'uploads')).catch(() => []);
      expect(rows.length).toBe(statuses.get(201));
      expect(objects.sort()).toEqual(rows.map((row) => row.storage_path.replace(/^uploads\//, '')).sort());
    } finally {
      await database.close();
    }
  });

  it(`${REQUESTS / 4} refused uploads of up to 1 MiB through a real HTTP client: every one reads its refusal, no client error`, {
    timeout: 240_000,
  }, async () => {
    const random = seededRandom(SEED + 2);
    const cases = Array.from({ length: REQUESTS / 4 }, () => refusedUpload(random));
    const outcomes: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const index = next++;
        const { form, expected, summary } = cases[index] as RefusedUpload;
        try {
          // undici sends the head, then the body as it goes: a server that answered and closed
          // before reading the rest makes this write fail (EPIPE) and fetch reject.
          const response = await fetch(`${url}/v1/uploads`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${key}`, 'X-Chat-User': 'fuzz-user' },
            body: form,
          });
          await response.arrayBuffer();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status !== expected) outcomes.push(`#${index} ${response.status}, not ${expected}: ${summary}`);
        } catch (error) {
          const cause = (error as Error & { cause?: { code?: string } }).cause;
          outcomes.push(`#${index} client error ${cause?.code ?? String(error)}: ${summary}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(outcomes.slice(0, 20)).toEqual([]);
    for (const status of [400, 413, 415]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);
    expect(service.child.exitCode).toBeNull();
  });

  it(`${REQUESTS / 2} JSON bodies (MCP, chat, resign, delete): cut, garbled or abandoned, never a 5xx`, {
    timeout: 240_000,
  }, async () => {
    const random = seededRandom(SEED + 1);
    const { statuses } = await fuzz(Array.from({ length: REQUESTS / 2 }, () => jsonCase(random, key)));
    for (const status of [200, 400, 413, 415]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);
  });
});
