import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatHistorySchema } from '../routes/chat-history-schema.js';
import { OPENAPI_FILE } from '../routes/docs.js';
import { STREAM_TIMEOUT_HEADER } from '../src/hosted/proxy-headers.js';
import { packageRoot } from '../src/package-root.js';
import type { AgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { pollUntil } from './support/poll.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn } from './support/scripted-model-server.js';
import { agentHeaders, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';
import { upload } from './support/upload.js';

/**
 * The schema `GET /v1/chats/{chatId}` documents must describe the histories the service really
 * returns: tool calls, a published file, an upload that is gone (`unavailable`, `url: ''`) and an
 * answer cut short (`metadata.mordn.interrupted`). Each real history is checked against the zod
 * schema the document is generated from and against the committed document itself: every part
 * matches exactly one documented alternative, has its required fields and no undocumented one.
 */

const CSV = 'region,total\nnorth,3\nsouth,5\n';

function lastUserText(request: ChatCompletionRequest): string {
  const users = request.messages.filter((message) => message.role === 'user');
  return JSON.stringify(users.at(-1)?.content ?? '');
}

function script(request: ChatCompletionRequest): ModelTurn {
  const text = lastUserText(request);
  const step = request.messages.filter((message) => message.role === 'tool').length;
  if (text.includes('SCENARIO publish')) {
    const storagePath = /storagePath=\\"(uploads\/[0-9a-f]{32})\\"/.exec(text)?.[1] ?? 'missing';
    const turns: ModelTurn[] = [
      { toolCalls: [{ name: 'sandbox_import_file', arguments: { storagePath } }] },
      { toolCalls: [{ name: 'sandbox_exec', arguments: { command: 'cp uploads/sales.csv copy.csv' } }] },
      { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'copy.csv' } }] },
      { text: ['Here is ', 'your copy.'] },
    ];
    return turns[step] ?? { text: 'done' };
  }
  // Slower than the one-second deadline the slow chat is given.
  return { text: ['Once', ' upon', ' a', ' time'], deltaDelayMs: 800 };
}

let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;
let document: Json;

beforeAll(async () => {
  ({ service, fixture, close } = await startScriptedChatService(script));
  document = JSON.parse(await readFile(path.join(packageRoot(), OPENAPI_FILE), 'utf8'));
});
afterAll(() => close());

const schemas = () => document.components.schemas;
const resolve = (schema: Json): Json =>
  schema.$ref ? schemas()[String(schema.$ref).split('/').pop() as string] : schema;

/** The documented alternatives of `UIMessagePart` whose `type` accepts this part's `type`. */
function documentedAlternatives(part: { type: string }): Json[] {
  return schemas()
    .UIMessagePart.oneOf.map(resolve)
    .filter((alternative: Json) => {
      const type = alternative.properties.type;
      return type.enum ? type.enum.includes(part.type) : new RegExp(type.pattern).test(part.type);
    });
}

/** Problems of a history against the committed document: none, when it describes the history. */
function undocumented(history: Json): string[] {
  const problems: string[] = [];
  const message = resolve(schemas().UIMessage);
  for (const [index, entry] of history.messages.entries()) {
    for (const key of Object.keys(entry)) {
      if (!(key in message.properties)) problems.push(`messages[${index}].${key}`);
    }
    for (const part of entry.parts) {
      const alternatives = documentedAlternatives(part);
      if (alternatives.length !== 1) {
        problems.push(`${part.type}: ${alternatives.length} alternatives`);
        continue;
      }
      const [alternative] = alternatives;
      for (const key of Object.keys(part)) {
        if (!(key in alternative.properties)) problems.push(`${part.type}.${key} is not documented`);
      }
      for (const key of alternative.required ?? []) {
        if (!(key in part)) problems.push(`${part.type}.${key} is required but missing`);
      }
    }
  }
  return problems;
}

async function history(chatId: string): Promise<Json> {
  const response = await service.fetch(`/v1/chats/${chatId}`, { headers: agentHeaders(fixture.key, 'alice') });
  expect(response.status).toBe(200);
  return readJson(response);
}

function postChat(body: unknown, headers: Record<string, string> = {}) {
  return service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, 'alice'), 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

describe('the documented chat history schema', () => {
  it('describes a history with sandbox tool calls, a published file and an unavailable upload', async () => {
    const uploaded = await readJson(
      await upload(service, fixture.key, { bytes: CSV, filename: 'sales.csv', type: 'text/csv' }, 'alice'),
    );
    const answer = await postChat(
      chatBody('chat-documented', 'SCENARIO publish: copy it', [
        { storagePath: uploaded.storagePath, filename: 'sales.csv', mediaType: 'text/csv' },
      ]),
    );
    expect(answer.status).toBe(200);
    await readUiChunks(answer);
    const removed = await service.fetch('/v1/uploads', {
      method: 'DELETE',
      headers: { ...agentHeaders(fixture.key, 'alice'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ storagePaths: [uploaded.storagePath] }),
    });
    expect(removed.status).toBe(204);

    const body = await history('chat-documented');
    const parts = body.messages.flatMap((message: Json) => message.parts);
    const types = new Set(parts.map((part: Json) => part.type));
    expect([...types]).toEqual(expect.arrayContaining(['text', 'file', 'step-start', 'dynamic-tool']));
    expect(parts).toContainEqual(expect.objectContaining({ type: 'file', unavailable: true, url: '' }));
    expect(parts).toContainEqual(
      expect.objectContaining({
        type: 'file',
        filename: 'copy.csv',
        storagePath: expect.stringMatching(/^artifacts\//),
      }),
    );
    expect(parts).toContainEqual(
      expect.objectContaining({ type: 'dynamic-tool', toolName: 'sandbox_publish_file', state: 'output-available' }),
    );

    const parsed = ChatHistorySchema.safeParse(body);
    expect(parsed.success ? undefined : parsed.error.issues).toBeUndefined();
    expect(undocumented(body)).toEqual([]);
  });

  it('describes an answer cut short by its deadline, with metadata.mordn.interrupted', async () => {
    const answer = await postChat(chatBody('chat-deadline', 'tell me a story'), { [STREAM_TIMEOUT_HEADER]: '1000' });
    await readUiChunks(answer);
    const body = await pollUntil(
      () => history('chat-deadline'),
      (value) => value.messages.at(-1)?.metadata?.mordn?.interrupted !== undefined,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(body.messages.at(-1).metadata).toEqual({ mordn: { interrupted: { reason: 'timeout' } } });
    expect(body.messages.at(-1).parts).toContainEqual(expect.objectContaining({ type: 'text', state: 'done' }));

    const parsed = ChatHistorySchema.safeParse(body);
    expect(parsed.success ? undefined : parsed.error.issues).toBeUndefined();
    expect(undocumented(body)).toEqual([]);
    const reason = resolve(schemas().UIMessageMetadata).properties.mordn.properties.interrupted.properties.reason;
    expect(reason.enum).toContain(body.messages.at(-1).metadata.mordn.interrupted.reason);
  });
});
