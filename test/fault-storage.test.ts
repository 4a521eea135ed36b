import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createS3Client } from '../src/storage/s3-storage.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import {
  type S3Fault,
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';
import { PNG_1X1, pdfOfSize, upload } from './support/upload.js';

/**
 * The S3-protocol server failing underneath the service — answering 500 or 503, or accepting
 * requests and never answering — and then coming back: uploads are refused with a 503 and leave
 * neither a row, nor an object, nor a spooled file; deletes keep their rows; chats still answer;
 * and everything works again afterwards, through the same service.
 */

/** The service gives up on a silent S3 request after this long (the SDK tries three times). */
const S3_TIMEOUT_MS = 400;
/** Any request, fault or not, answers within this. */
const ANSWER_WITHIN_MS = 8_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let s3: TestS3Server;
let model: ScriptedModelServer;
let service: TestService;
let agent: AgentFixture;

beforeAll(async () => {
  s3 = await startS3Server();
  // The service reads S3 credentials from the standard AWS chain: the process environment.
  for (const [name, value] of Object.entries(s3CredentialsEnvironment(s3))) vi.stubEnv(name, value);
  model = await startScriptedModelServer(() => ({ text: 'Seen.' }));
  service = await startTestService({
    environment: {
      ...s3StorageEnvironment(s3),
      S3_TIMEOUT_MS: String(S3_TIMEOUT_MS),
      MORDN_MODEL: 'openai-compatible:scripted-1',
      MORDN_MODEL_BASE_URL: model.baseUrl,
    },
  });
  agent = await createAgentFixture(service.database.db);
});
afterAll(async () => {
  s3?.inject(undefined);
  await service?.close();
  await model?.close();
  await s3?.close();
  vi.unstubAllEnvs();
});

async function timed<T>(send: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await send();
  return { value, ms: performance.now() - started };
}

async function uploaded(bytes: Uint8Array, filename: string) {
  const response = await upload(service, agent.key, { bytes, filename }, 'alice');
  expect(response.status).toBe(201);
  return (await readJson(response)) as { storagePath: string; filename: string; mediaType: string };
}

function resign(storagePath: string): Promise<Response> {
  return service.fetch('/v1/uploads/resign', {
    method: 'POST',
    headers: { ...agentHeaders(agent.key, 'alice'), 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePath }),
  });
}

function deleteUploads(storagePaths: string[]): Promise<Response> {
  return service.fetch('/v1/uploads', {
    method: 'DELETE',
    headers: { ...agentHeaders(agent.key, 'alice'), 'Content-Type': 'application/json' },
    body: JSON.stringify({ storagePaths }),
  });
}

/** Chats about `file`; returns whether the model was handed its bytes (rather than a description). */
async function chatAbout(file: { storagePath: string; filename: string; mediaType: string }, chatId: string) {
  const index = model.requests.length;
  const response = await service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(agent.key, 'alice'), 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, 'What is in this?', [file])),
  });
  expect(response.status).toBe(200);
  const chunks = await readUiChunks(response);
  expect(chunks.some((chunk) => chunk.type === 'error')).toBe(false);
  expect(chunks.some((chunk) => chunk.type === 'text-delta')).toBe(true);
  const request = await model.waitForRequest(index);
  return JSON.stringify(request.messages).includes(Buffer.from(PNG_1X1).toString('base64'));
}

async function rows() {
  return service.database.db
    .selectFrom('stored_files')
    .select(['storage_path', 'sha256'])
    .where('agent_id', '=', agent.agentId)
    .orderBy('storage_path')
    .execute();
}

/** Every key in the bucket, read back through the S3 protocol. */
async function bucketKeys(): Promise<string[]> {
  const client = createS3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: s3.credentials,
  });
  try {
    const listing = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    return (listing.Contents ?? []).map((object) => object.Key ?? '').sort();
  } finally {
    client.destroy();
  }
}

async function tempFiles(): Promise<string[]> {
  return readdir(path.join(service.config.dataDir, 'tmp')).catch(() => []);
}

describe.each<[string, S3Fault]>([
  ['answering 500', 500],
  ['answering 503', 503],
  ['never answering', 'hang'],
])('S3 %s for a while', (_name, fault) => {
  it('refuses uploads and deletes cleanly, keeps chats answering, and recovers afterwards', async () => {
    const image = await uploaded(PNG_1X1, `chart-${fault}.png`);
    const before = await rows();

    s3.inject(fault);
    try {
      const refused = await timed(() =>
        upload(service, agent.key, { bytes: pdfOfSize(2048), filename: 'r.pdf' }, 'alice'),
      );
      expect(refused.value.status).toBe(503);
      expect((await readJson(refused.value)).code).toBe('STORAGE_UNAVAILABLE');
      expect(refused.ms).toBeLessThan(ANSWER_WITHIN_MS);
      expect(await rows()).toEqual(before);
      expect(await tempFiles()).toEqual([]);

      const kept = await timed(() => deleteUploads([image.storagePath]));
      expect(kept.value.status).toBe(503);
      expect((await readJson(kept.value)).code).toBe('STORAGE_UNAVAILABLE');
      expect(kept.ms).toBeLessThan(ANSWER_WITHIN_MS);
      expect(await rows()).toEqual(before);

      // Signing is offline: a fresh link is still handed out, and the store itself refuses it.
      const link = await resign(image.storagePath);
      expect(link.status).toBe(200);
      const { url } = await readJson(link);
      if (fault !== 'hang') expect((await fetch(url)).status).toBe(fault);

      // The chat still answers, describing the image it cannot read rather than failing.
      const degraded = await timed(() => chatAbout(image, `during-${fault}`));
      expect(degraded.value).toBe(false);
      expect(degraded.ms).toBeLessThan(ANSWER_WITHIN_MS);
    } finally {
      s3.inject(undefined);
    }

    // Recovery, with the same service: the old link downloads the bytes, uploads and deletes work.
    const link = await resign(image.storagePath);
    const download = await fetch((await readJson(link)).url);
    expect(download.status).toBe(200);
    expect(sha256(new Uint8Array(await download.arrayBuffer()))).toBe(sha256(PNG_1X1));
    expect(await chatAbout(image, `after-${fault}`)).toBe(true);
    const pdf = pdfOfSize(3000);
    const later = await uploaded(pdf, 'later.pdf');
    expect((await rows()).find((row) => row.storage_path === later.storagePath)?.sha256).toBe(sha256(pdf));
    expect((await deleteUploads([image.storagePath, later.storagePath])).status).toBe(204);

    // Nothing left behind: the bucket holds exactly the registered objects, no spooled files remain.
    const registered = (await rows()).map((row) => row.storage_path);
    expect(registered).not.toContain(image.storagePath);
    expect(await bucketKeys()).toEqual(registered);
    expect(await tempFiles()).toEqual([]);
  });
});
