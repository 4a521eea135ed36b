import { createHash } from 'node:crypto';
import type { UIMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createChatHandler } from '../src/chat/create-chat-handler.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import {
  s3CredentialsEnvironment,
  s3StorageEnvironment,
  startS3Server,
  type TestS3Server,
} from './support/s3-server.js';
import {
  type ChatCompletionMessage,
  type ChatCompletionRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from './support/scripted-model-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import { toolCallingModel } from './support/tool-calling-model.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';
import { PNG_1X1, pdfOfSize, upload } from './support/upload.js';

/**
 * What the model receives for the files of a chat, through the real provider over HTTP: images
 * (and PDFs without sandboxes) as the stored bytes, never a link, read from the user's own
 * storage — on local disk and on an S3-protocol server alike.
 */

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The user content parts of the last user message of a model request. */
function lastUserContent(request: ChatCompletionRequest): Array<Record<string, unknown>> {
  const user = request.messages.filter((message: ChatCompletionMessage) => message.role === 'user').at(-1);
  return Array.isArray(user?.content) ? user.content : [];
}

/** The bytes of a `data:<type>;base64,…` URL, checking its type. */
function dataUrlBytes(url: unknown, mediaType: string): Uint8Array {
  const prefix = `data:${mediaType};base64,`;
  expect(typeof url === 'string' && url.startsWith(prefix)).toBe(true);
  return Buffer.from(String(url).slice(prefix.length), 'base64');
}

interface StorageSetup {
  environment: Record<string, string>;
  close(): Promise<void>;
}

async function fsStorage(): Promise<StorageSetup> {
  return { environment: {}, close: async () => undefined };
}

async function s3Storage(): Promise<StorageSetup> {
  const s3: TestS3Server = await startS3Server();
  // The service reads S3 credentials from the standard AWS chain: the process environment.
  for (const [name, value] of Object.entries(s3CredentialsEnvironment(s3))) vi.stubEnv(name, value);
  return {
    environment: s3StorageEnvironment(s3),
    close: async () => {
      vi.unstubAllEnvs();
      await s3.close();
    },
  };
}

describe.each([
  ['fs', fsStorage],
  ['s3', s3Storage],
])('files reach the model as bytes (%s storage)', (_kind, startStorage) => {
  let model: ScriptedModelServer;
  let storage: StorageSetup;
  let service: TestService;
  let plain: AgentFixture;
  let managed: AgentFixture;

  beforeAll(async () => {
    model = await startScriptedModelServer(() => ({ text: 'Seen.' }));
    storage = await startStorage();
    service = await startTestService({
      environment: {
        ...storage.environment,
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_MODEL: 'openai-compatible:scripted-1',
        MORDN_MODEL_BASE_URL: model.baseUrl,
      },
    });
    plain = await createAgentFixture(service.database.db);
    managed = await createAgentFixture(service.database.db, { published: ENABLED });
  });
  afterAll(async () => {
    await service?.close();
    await storage?.close();
    await model?.close();
  });

  async function uploaded(fixture: AgentFixture, bytes: Uint8Array | string, filename: string, userId = 'alice') {
    const response = await upload(service, fixture.key, { bytes, filename }, userId);
    expect(response.status).toBe(201);
    return (await readJson(response)) as { storagePath: string; filename: string; mediaType: string };
  }

  async function chat(fixture: AgentFixture, chatId: string, files: Parameters<typeof chatBody>[2], userId = 'alice') {
    const index = model.requests.length;
    const response = await service.fetch('/v1/chat', {
      method: 'POST',
      headers: { ...agentHeaders(fixture.key, userId), 'Content-Type': 'application/json' },
      body: JSON.stringify(chatBody(chatId, 'What is in these?', files)),
    });
    expect(response.status).toBe(200);
    const chunks = await readUiChunks(response);
    expect(chunks.some((chunk) => chunk.type === 'error')).toBe(false);
    return model.waitForRequest(index);
  }

  it('sends an image as the uploaded bytes, with no link anywhere in the request', async () => {
    const png = await uploaded(plain, PNG_1X1, 'chart.png');
    const request = await chat(plain, 'image-bytes', [png]);
    const [image] = lastUserContent(request).filter((part) => part.type === 'image_url');
    const bytes = dataUrlBytes((image?.image_url as { url?: unknown } | undefined)?.url, 'image/png');
    expect(sha256(bytes)).toBe(sha256(PNG_1X1));
    expect(JSON.stringify(request)).not.toContain('http');
  });

  it('sends a PDF as its bytes when the agent has no sandboxes', async () => {
    const pdfBytes = pdfOfSize(4096);
    const pdf = await uploaded(plain, pdfBytes, 'report.pdf');
    const request = await chat(plain, 'pdf-bytes', [pdf]);
    const [file] = lastUserContent(request).filter((part) => part.type === 'file');
    const bytes = dataUrlBytes((file?.file as { file_data?: unknown } | undefined)?.file_data, 'application/pdf');
    expect(sha256(bytes)).toBe(sha256(pdfBytes));
    expect(JSON.stringify(request)).not.toContain('http');
  });

  it('with sandboxes, sends the image as bytes and the PDF only as a descriptor', async () => {
    const png = await uploaded(managed, PNG_1X1, 'chart.png', 'bob');
    const pdf = await uploaded(managed, pdfOfSize(2048), 'report.pdf', 'bob');
    const request = await chat(managed, 'managed-files', [png, pdf], 'bob');
    const content = lastUserContent(request);
    expect(content.filter((part) => part.type === 'image_url')).toHaveLength(1);
    expect(content.filter((part) => part.type === 'file')).toHaveLength(0);
    expect(JSON.stringify(content)).toContain(`storagePath=\\"${pdf.storagePath}\\"`);
    expect(JSON.stringify(content)).not.toContain('http');
  });

  it('decides by the stored type: a CSV or DOCX claimed as image/png reaches the model as a descriptor', async () => {
    const csv = await uploaded(managed, 'region,total\nnorth,3\n', 'sales.csv', 'carol');
    const request = await chat(managed, 'disguised', [{ ...csv, mediaType: 'image/png' }], 'carol');
    const content = lastUserContent(request);
    expect(content.filter((part) => part.type === 'image_url' || part.type === 'file')).toEqual([]);
    expect(JSON.stringify(content)).toContain('mediaType=\\"text/csv\\"');
    // Without sandboxes for the request, the same file is still only described.
    const index = model.requests.length;
    const response = await service.fetch('/v1/chat', {
      method: 'POST',
      headers: {
        ...agentHeaders(managed.key, 'carol'),
        'Content-Type': 'application/json',
        'X-Mordn-Sandboxes': 'off',
      },
      body: JSON.stringify(chatBody('disguised-off', 'And now?', [{ ...csv, mediaType: 'image/png' }])),
    });
    await readUiChunks(response);
    const unmanaged = lastUserContent(await model.waitForRequest(index));
    expect(unmanaged.filter((part) => part.type === 'image_url' || part.type === 'file')).toEqual([]);
    expect(JSON.stringify(unmanaged)).toContain('mediaType=\\"text/csv\\"');
  });

  it('hands transformMessages the safe projection, and the model gets what the hook returns', async () => {
    const png = await uploaded(managed, PNG_1X1, 'chart.png', 'dora');
    const csv = await uploaded(managed, 'region,total\nnorth,3\n', 'sales.csv', 'dora');
    const agent = { tenantId: managed.tenantId, agentId: managed.agentId };
    const seen: UIMessage[][] = [];
    const { model: mock, prompts } = toolCallingModel([], 'ok');
    const handler = createChatHandler({
      getUserId: () => 'dora',
      model: mock,
      ...serviceChatStorage(service, agent, 'transform-test'),
      getHostedConfig: async () => ENABLED,
      sandboxes: createHostedSandboxes({ apiKey: managed.key, selfBaseUrl: service.deps.selfBaseUrl as string }),
      transformMessages: (messages) => {
        seen.push(structuredClone(messages));
        return [...messages, { id: 'host-note', role: 'user', parts: [{ type: 'text', text: 'HOST-NOTE' }] }];
      },
    });
    const response = await handler.POST(
      new Request('http://app.example/api/chat', {
        method: 'POST',
        body: JSON.stringify(chatBody('transformed', 'What is in these?', [png, csv])),
      }),
    );
    await readUiChunks(response);
    expect(seen).toHaveLength(1);
    const [image, document, question] = seen[0]?.at(-1)?.parts ?? [];
    expect(image).toMatchObject({ type: 'file', mediaType: 'image/png', filename: 'chart.png' });
    expect(sha256(dataUrlBytes((image as { url?: string }).url, 'image/png'))).toBe(sha256(PNG_1X1));
    expect(document).toMatchObject({ type: 'text', text: expect.stringContaining(`storagePath="${csv.storagePath}"`) });
    expect(question).toEqual({ type: 'text', text: 'What is in these?' });
    expect(JSON.stringify(seen)).not.toContain('http');
    expect(prompts.at(-1)).toContain('HOST-NOTE');
  });

  it('describes a file whose type the model does not take, instead of sending it', async () => {
    const pdfBytes = pdfOfSize(1024);
    const pdf = await uploaded(plain, pdfBytes, 'report.pdf', 'erin');
    const png = await uploaded(plain, PNG_1X1, 'chart.png', 'erin');
    const agent = { tenantId: plain.tenantId, agentId: plain.agentId };
    const { model: mock, prompts } = toolCallingModel([], 'ok');
    const handler = createChatHandler({
      getUserId: () => 'erin',
      model: mock,
      ...serviceChatStorage(service, agent, 'inline-types-test'),
      getHostedConfig: async () => ({ schemaVersion: 1 }),
      inlineMediaTypes: ['image/png'],
    });
    await readUiChunks(
      await handler.POST(
        new Request('http://app.example/api/chat', {
          method: 'POST',
          body: JSON.stringify(chatBody('inline-types', 'Read these.', [pdf, png])),
        }),
      ),
    );
    const prompt = prompts.at(-1) ?? '';
    expect(prompt).toContain(Buffer.from(PNG_1X1).toString('base64'));
    expect(prompt).not.toContain(Buffer.from(pdfBytes).toString('base64').slice(0, 40));
    expect(prompt).toContain('<attachment filename=\\"report.pdf\\" mediaType=\\"application/pdf\\"');
  });

  it('never sends another user’s file: it is unavailable, and no bytes go out', async () => {
    const png = await uploaded(plain, PNG_1X1, 'private.png', 'owner');
    const request = await chat(plain, 'foreign-file', [png], 'intruder');
    const content = lastUserContent(request);
    expect(content.filter((part) => part.type === 'image_url')).toEqual([]);
    expect(JSON.stringify(content)).toContain('attachment-unavailable');
  });
});
