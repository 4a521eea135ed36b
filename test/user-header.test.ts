import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/agents/config-schema.js';
import type { ChatRequestContext } from '../src/chat/types.js';
import { isServiceError } from '../src/errors.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { utf8HeaderBytes } from './support/agent-auth-suite.js';
import type { AgentFixture } from './support/fixtures.js';
import { rawRequest } from './support/http.js';
import { readJson } from './support/json.js';
import { servedRequests } from './support/metrics.js';
import { sendRawCase } from './support/raw-http-fuzz.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import { agentHeaders, type TestService } from './support/service.js';
import { chatBody } from './support/ui-stream.js';
import { PNG_1X1, upload } from './support/upload.js';

const ENABLED: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };
const CSV = { bytes: 'name,score\nada,3\n', filename: 'scores.csv', type: 'text/csv' };
const ANONYMOUS_SPELLINGS = ['ANON:visitor', 'Anon:visitor', 'aNoN:visitor'];

let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ service, fixture, close } = await startScriptedChatService(
    (request) => ({ text: request.tools?.length ? `tools:${request.tools.length}` : 'no tools' }),
    { sandboxReadiness: async () => true },
  ));
});
afterAll(() => close());

/** Requests the service answered on a route, from its own metrics. */
const served = (route: string) => servedRequests(service, route);

function resign(storagePath: string, userId: string) {
  return rawRequest(`${service.url}/v1/uploads/resign`, {
    method: 'POST',
    headers: [
      ['Authorization', `Bearer ${fixture.key}`],
      ['X-Chat-User', userId],
      ['Content-Type', 'application/json'],
    ],
    body: JSON.stringify({ storagePath }),
  });
}

describe('X-Chat-User is used exactly as received', () => {
  let alicesFile: string;

  beforeAll(async () => {
    const response = await upload(service, fixture.key, { bytes: PNG_1X1, filename: 'a.png' }, 'alice');
    expect(response.status).toBe(201);
    alicesFile = (await readJson(response)).storagePath;
  });

  it('lets alice re-sign her own file', async () => {
    expect((await resign(alicesFile, 'alice')).status).toBe(200);
  });

  it.each([
    ['a trailing no-break space byte', 'alice\u00a0'],
    ['a leading no-break space byte', '\u00a0alice'],
    ['the UTF-8 bytes of a trailing no-break space', utf8HeaderBytes('alice\u00a0')],
    ['the UTF-8 bytes of a trailing ideographic space', utf8HeaderBytes('alice\u3000')],
    ['the UTF-8 bytes of a trailing byte order mark', utf8HeaderBytes('alice\ufeff')],
    ['a comma joining alice to herself', 'alice, alice'],
    ['a comma joining alice to another user', 'alice,bob'],
  ])('never maps alice with %s onto alice (400 INVALID_USER)', async (_name, userId) => {
    const response = await resign(alicesFile, userId);
    expect(response.status).toBe(400);
    const problem = JSON.parse(response.body);
    expect(problem.code).toBe('INVALID_USER');
    expect(problem.detail).toMatch(/X-Chat-User/);
    expect(response.body).not.toContain(alicesFile);
  });

  it('names the comma in its refusal', async () => {
    const problem = JSON.parse((await resign(alicesFile, 'alice,bob')).body);
    expect(problem.detail).toContain('comma');
  });

  it('refuses alice sent twice, even with the same value', async () => {
    const response = await rawRequest(`${service.url}/v1/me`, {
      headers: [
        ['Authorization', `Bearer ${fixture.key}`],
        ['X-Chat-User', 'alice'],
        ['X-Chat-User', 'alice'],
      ],
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'INVALID_USER', detail: expect.stringContaining('once') });
  });

  it.each([
    ['NUL', 0x00],
    ['SOH', 0x01],
    ['vertical tab', 0x0b],
    ['DEL', 0x7f],
  ])('a %s byte never reaches the app: the HTTP parser refuses the request', async (_name, byte) => {
    const before = await served('/v1/me');
    // node:http refuses to send these bytes at all: they go out on a raw socket.
    const head = [
      'GET /v1/me HTTP/1.1',
      'Host: 127.0.0.1',
      'Connection: close',
      `Authorization: Bearer ${fixture.key}`,
      `X-Chat-User: alice${String.fromCharCode(byte)}`,
      '',
      '',
    ].join('\r\n');
    const port = Number(new URL(service.url).port);
    const { status, clientError } = await sendRawCase(port, {
      summary: `X-Chat-User with byte ${byte}`,
      head,
      pieces: [],
      ending: 'answer',
    });
    expect(status).toBe(400);
    expect(clientError).toBeUndefined();
    expect(await served('/v1/me')).toBe(before);
  });

  it('holds for requests made with app.request(), where the Fetch API joins a repeated header', async () => {
    const send = (values: string[]) => {
      const headers = new Headers({ Authorization: `Bearer ${fixture.key}` });
      for (const value of values) headers.append('X-Chat-User', value);
      return service.app.request('/v1/me', { headers });
    };
    const joined = await send(['alice', 'bob']);
    expect(joined.status).toBe(400);
    expect(await readJson(joined)).toMatchObject({ code: 'INVALID_USER', detail: expect.stringContaining('comma') });
    expect((await send(['alice', 'alice'])).status).toBe(400);
    expect((await send(['alice\u00a0'])).status).toBe(400);
    const plain = await send(['alice']);
    expect(plain.status).toBe(200);
    expect((await readJson(plain)).userId).toBe('alice');
  });
});

describe('anon: users, in any letter case', () => {
  it.each(ANONYMOUS_SPELLINGS)('%s is refused by the sandbox routes (403 ANONYMOUS_USER)', async (userId) => {
    const status = await service.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key, userId) });
    expect(status.status).toBe(403);
    expect((await readJson(status)).code).toBe('ANONYMOUS_USER');
    const mcp = await service.fetch('/v1/sandbox/mcp', {
      method: 'POST',
      headers: {
        ...agentHeaders(fixture.key, userId),
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(mcp.status).toBe(403);
    expect((await readJson(mcp)).code).toBe('ANONYMOUS_USER');
  });

  it.each(ANONYMOUS_SPELLINGS)('%s keeps the default upload policy and picker', async (userId) => {
    expect((await upload(service, fixture.key, CSV, 'visitor')).status).toBe(201);
    expect((await upload(service, fixture.key, CSV, userId)).status).toBe(415);
    const features = await readJson(
      await service.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key, userId) }),
    );
    expect(features.features.attachments.accept).not.toContain('text/csv');
    const signedIn = await readJson(
      await service.fetch('/v1/bootstrap', { headers: agentHeaders(fixture.key, 'visitor') }),
    );
    expect(signedIn.features.attachments.accept).toContain('text/csv');
  });

  it.each(ANONYMOUS_SPELLINGS)('%s is refused by createHostedSandboxes before any request', async (userId) => {
    const sandboxes = createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: service.deps.selfBaseUrl as string });
    const context: ChatRequestContext = {
      request: new Request('http://host.example/api/chat'),
      userId,
      chatId: 'c1',
      config: ENABLED,
      abortSignal: new AbortController().signal,
    };
    const before = [await served('/v1/sandbox/status'), await served('/v1/sandbox/mcp')];
    expect(await sandboxes.status(context)).toEqual({ enabled: true, available: false });
    const refusal = await sandboxes
      .buildTools(context, { abortSignal: new AbortController().signal, onArtifact: () => undefined })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isServiceError(refusal) && refusal.code).toBe('ANONYMOUS_USER');
    expect([await served('/v1/sandbox/status'), await served('/v1/sandbox/mcp')]).toEqual(before);
  });

  it.each(ANONYMOUS_SPELLINGS)('%s signed in through createMordnHandler gets no sandbox', async (userId) => {
    const handler = createMordnHandler({
      apiKey: fixture.key,
      getUserId: () => userId,
      selfBaseUrl: service.deps.selfBaseUrl as string,
    });
    const before = [await served('/v1/sandbox/status'), await served('/v1/sandbox/mcp')];
    const bootstrap = await handler.GET(new Request('http://app.example/api/chat?bootstrap'));
    expect(bootstrap.status).toBe(200);
    expect((await readJson(bootstrap)).features.attachments.accept).not.toContain('text/csv');
    const answer = await handler.POST(
      new Request('http://app.example/api/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody(`chat-${userId}`, 'hello')),
      }),
    );
    expect(await answer.text()).not.toContain('tools:');
    expect([await served('/v1/sandbox/status'), await served('/v1/sandbox/mcp')]).toEqual(before);
  });
});
