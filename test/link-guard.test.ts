import { readFile } from 'node:fs/promises';
import type { UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_PUBLISHED_NOTE } from '../src/chat/link-guard.js';
import { readJson } from './support/json.js';
import { type ScriptedChatService, startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn } from './support/scripted-model-server.js';
import { agentHeaders } from './support/service.js';
import { assembleWithSdk, chatBody, readUiChunks } from './support/ui-stream.js';

const REPORT = 'region,total\nnorth,6\n';
const NOTES = '# Notes\n\nAll good.\n';

/**
 * The model of these tests: it writes two files with the real tools (unless told `NO-TOOLS`),
 * then answers with every link form the hosted interpreters' habits produce, split mid-link
 * across deltas.
 */
function script(request: ChatCompletionRequest): ModelTurn {
  const lastUser = request.messages.map((message) => message.role).lastIndexOf('user');
  const asked = JSON.stringify(request.messages[lastUser]);
  const step = request.messages.slice(lastUser).filter((message) => message.role === 'tool').length;
  if (asked.includes('PUBLISH-THEN-LINK')) {
    const turns: ModelTurn[] = [
      { toolCalls: [{ name: 'sandbox_write_file', arguments: { path: 'report.csv', content: REPORT } }] },
      { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: 'report.csv' } }] },
    ];
    return turns[step] ?? { text: ['Published: [rep', 'ort](sandbox:/mnt/data/report.csv).'] };
  }
  const writes: ModelTurn[] = asked.includes('NO-TOOLS')
    ? []
    : asked.includes('OTHER-FILE')
      ? [{ toolCalls: [{ name: 'sandbox_write_file', arguments: { path: 'other.txt', content: 'other' } }] }]
      : [
          { toolCalls: [{ name: 'sandbox_write_file', arguments: { path: 'report.csv', content: REPORT } }] },
          { toolCalls: [{ name: 'sandbox_write_file', arguments: { path: 'docs/notes.md', content: NOTES } }] },
        ];
  return (
    writes[step] ?? {
      text: [
        'Your [rep',
        'ort](sandbox:/mnt/data/report.csv) is ready (again: [report](/workspace/report.csv)), ',
        'see [the notes](docs/notes.md), sandbox:/mnt/data/gone.csv, ',
        '[pw](sandbox:/mnt/data/../../etc/passwd), <file:///etc/hostname> and [site](pricing).\n',
        'Paths in prose such as /workspace/report.csv stay.',
      ],
    }
  );
}

const EXPECTED_TEXT =
  'Your report is ready (again: report), see the notes, ' +
  `gone.csv ${NOT_PUBLISHED_NOTE}, pw ${NOT_PUBLISHED_NOTE}, file:///etc/hostname ${NOT_PUBLISHED_NOTE} ` +
  'and [site](pricing).\nPaths in prose such as /workspace/report.csv stay.';

type FileChunk = Extract<UIMessageChunk, { type: 'file' }> & {
  providerMetadata: { mordn: { sandboxFile: { filename: string; size: number; storagePath: string } } };
};

const textOf = (chunks: UIMessageChunk[]) =>
  chunks.map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : '')).join('');
const filesOf = (chunks: UIMessageChunk[]) => chunks.filter((chunk): chunk is FileChunk => chunk.type === 'file');

function chatting(chat: ScriptedChatService) {
  const headers = (userId: string) => agentHeaders(chat.fixture.key, userId);
  return {
    async ask(userId: string, chatId: string, text: string) {
      const response = await chat.service.fetch('/v1/chat', {
        method: 'POST',
        headers: { ...headers(userId), 'Content-Type': 'application/json' },
        body: JSON.stringify(chatBody(chatId, text)),
      });
      expect(response.status).toBe(200);
      return readUiChunks(response);
    },
    /** The user's published files, as the API records them: one per real publish. */
    async artifacts(userId: string): Promise<Array<{ storagePath: string; filename: string; size: number }>> {
      return (await readJson(await chat.service.fetch('/v1/artifacts', { headers: headers(userId) }))).items;
    },
    async usage(userId: string) {
      return readJson(await chat.service.fetch('/v1/sandbox/usage', { headers: headers(userId) }));
    },
    async history(userId: string, chatId: string) {
      return readJson(await chat.service.fetch(`/v1/chats/${chatId}`, { headers: headers(userId) }));
    },
  };
}

describe('the link guard, in the service chat with real sandboxes', () => {
  let chat: ScriptedChatService;
  let api: ReturnType<typeof chatting>;
  beforeAll(async () => {
    chat = await startScriptedChatService(script, { environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' } });
    api = chatting(chat);
  });
  afterAll(() => chat.close());

  it('publishes each linked workspace file once, live, and notes every link that cannot be one', async () => {
    const chunks = await api.ask('linker', 'links-1', 'Write the report.');
    expect(textOf(chunks)).toBe(EXPECTED_TEXT);
    expect(JSON.stringify(chunks)).not.toContain('sandbox:');

    const files = filesOf(chunks);
    expect(files.map((file) => file.providerMetadata.mordn.sandboxFile.filename)).toEqual(['report.csv', 'notes.md']);
    expect(await (await fetch(files[0]?.url as string)).text()).toBe(REPORT);
    expect(await (await fetch(files[1]?.url as string)).text()).toBe(NOTES);

    // One real publish per card, recorded by the API; nothing for the missing file or the escapes.
    const published = await api.artifacts('linker');
    expect(published.map((item) => item.filename).sort()).toEqual(['notes.md', 'report.csv']);
    expect(published.map((item) => item.storagePath).sort()).toEqual(
      files.map((file) => file.providerMetadata.mordn.sandboxFile.storagePath).sort(),
    );
    const hostFiles = [await readFile('/etc/passwd', 'utf8'), await readFile('/etc/hostname', 'utf8')];
    expect(published.some((item) => hostFiles.some((bytes) => item.size === Buffer.byteLength(bytes)))).toBe(false);

    // The SDK's own client takes the stream; the card is a file part of the answer.
    const assembled = await assembleWithSdk(chunks);
    expect(assembled?.parts.filter((part) => part.type === 'file')).toHaveLength(2);
  });

  it('stores the rewritten answer, and history re-signs its cards', async () => {
    const chunks = await api.ask('historian', 'links-2', 'Write the report.');
    const streamed = filesOf(chunks);
    const history = await api.history('historian', 'links-2');
    const answer = history.messages.at(-1);
    const text = answer.parts
      .filter((part: { type: string }) => part.type === 'text')
      .map((part: { text: string }) => part.text)
      .join('');
    expect(text).toBe(EXPECTED_TEXT);
    const stored = answer.parts.filter((part: { type: string }) => part.type === 'file');
    expect(stored.map((part: { storagePath: string }) => part.storagePath)).toEqual(
      streamed.map((file) => file.providerMetadata.mordn.sandboxFile.storagePath),
    );
    expect(await (await fetch(stored[0].url)).text()).toBe(REPORT);
  });

  it('gives a file the model published itself no second publish or card when it also links it', async () => {
    const chunks = await api.ask('double', 'links-6', 'PUBLISH-THEN-LINK');
    expect(textOf(chunks)).toBe('Published: report.');
    expect(filesOf(chunks)).toHaveLength(1);
    expect(await api.artifacts('double')).toHaveLength(1);
  });

  it('never provisions a workspace: without one, every workspace link gets the note', async () => {
    expect(await api.usage('newcomer')).toEqual({ workspace: null });
    const chunks = await api.ask('newcomer', 'links-3', 'NO-TOOLS, just talk.');
    expect(textOf(chunks)).toBe(
      `Your report ${NOT_PUBLISHED_NOTE} is ready (again: report ${NOT_PUBLISHED_NOTE}), see [the notes](docs/notes.md), ` +
        `gone.csv ${NOT_PUBLISHED_NOTE}, pw ${NOT_PUBLISHED_NOTE}, file:///etc/hostname ${NOT_PUBLISHED_NOTE} ` +
        'and [site](pricing).\nPaths in prose such as /workspace/report.csv stay.',
    );
    expect(filesOf(chunks)).toEqual([]);
    expect(await api.usage('newcomer')).toEqual({ workspace: null });
    expect(await api.artifacts('newcomer')).toEqual([]);
  });

  it("publishes only from the user's own workspace", async () => {
    // `linker` has report.csv; `outsider` has a workspace without it.
    await api.ask('linker', 'links-4a', 'Write the report.');
    const linkerFiles = (await api.artifacts('linker')).length;
    const chunks = await api.ask('outsider', 'links-4b', 'OTHER-FILE');
    expect(filesOf(chunks)).toEqual([]);
    expect(textOf(chunks)).toContain(`Your report ${NOT_PUBLISHED_NOTE} is ready`);
    expect(textOf(chunks)).toContain('see [the notes](docs/notes.md),');
    expect(await api.artifacts('outsider')).toEqual([]);
    expect((await api.artifacts('linker')).length).toBe(linkerFiles);
  });
});

describe('the link guard under an execution policy without sandbox_publish_file', () => {
  let chat: ScriptedChatService;
  let api: ReturnType<typeof chatting>;
  beforeAll(async () => {
    chat = await startScriptedChatService(script, {
      environment: {
        MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
        MORDN_SANDBOX_TOOLS: 'sandbox_exec,sandbox_write_file,sandbox_read_file,sandbox_list_files',
      },
    });
    api = chatting(chat);
  });
  afterAll(() => chat.close());

  it('gives the note only and publishes nothing', async () => {
    const chunks = await api.ask('restricted', 'links-5', 'Write the report.');
    // The files were written: the workspace exists, but publishing is not allowed.
    expect((await api.usage('restricted')).workspace.fileCount).toBeGreaterThanOrEqual(2);
    expect(filesOf(chunks)).toEqual([]);
    expect(textOf(chunks)).toContain(`Your report ${NOT_PUBLISHED_NOTE} is ready`);
    expect(textOf(chunks)).toContain(`the notes ${NOT_PUBLISHED_NOTE}`);
    expect(await api.artifacts('restricted')).toEqual([]);
  });
});
