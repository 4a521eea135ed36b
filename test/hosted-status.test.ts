import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/agents/config-schema.js';
import { type CreateChatHandlerOptions, createChatHandler } from '../src/chat/create-chat-handler.js';
import { createHostedSandboxes, type HostedOptions } from '../src/hosted/create-hosted-sandboxes.js';
import { createAgentFixture } from './support/fixtures.js';
import { readJson } from './support/json.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, type StartTestServiceOptions, startTestService, type TestService } from './support/service.js';
import { toolCallingModel } from './support/tool-calling-model.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';

/**
 * What a chat answers when managed sandboxes are closed: "publish first" when the agent's
 * published config does not enable them, "unavailable now" when it does but they cannot be used
 * (an outage of the status route included, which is never a 500), and which leg of the gate was
 * closed in the API's log.
 */

const ENABLED: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };
const DISABLED: AgentConfig = { schemaVersion: 1 };
const PUBLISH_FIRST = /publish/i;
const UNAVAILABLE_NOW = /temporarily unavailable/i;

let model: ScriptedModelServer;
beforeAll(async () => {
  model = await startScriptedModelServer(() => ({ text: 'answered' }));
});
afterAll(() => model.close());

const emptyStore: CreateChatHandlerOptions['store'] = {
  loadMessages: async () => undefined,
  saveMessages: async () => undefined,
  deleteChat: async () => false,
};
const noFiles: CreateChatHandlerOptions['storage'] = { resign: async () => new Map(), delete: async () => undefined };

const chatRequest = (chatId: string) =>
  new Request('http://app.example/api/chat', { method: 'POST', body: JSON.stringify(chatBody(chatId, 'hi')) });

/**
 * A host's chat handler for alice that stores nothing, answers from `config` and reaches managed
 * sandboxes as `sandboxes` says; its model is `mock` unless `overrides` give another.
 */
function hostHandler(config: AgentConfig, sandboxes: HostedOptions, overrides: Partial<CreateChatHandlerOptions> = {}) {
  const mock = new MockLanguageModelV3();
  const handler = createChatHandler({
    getUserId: () => 'alice',
    model: mock,
    store: emptyStore,
    storage: noFiles,
    getHostedConfig: async () => config,
    sandboxes: createHostedSandboxes(sandboxes),
    ...overrides,
  });
  return { handler, mock };
}

describe('a status outage', () => {
  type Outage = 'reset' | 'not-json' | 'wrong-shape' | 'server-error';
  let outage: Outage = 'reset';
  let statusRequests = 0;
  let mcpRequests = 0;
  let server: http.Server;
  let origin: string;
  let unusedOrigin: string;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      if (request.url !== '/v1/sandbox/status') {
        mcpRequests += 1;
        response.writeHead(500).end();
        return;
      }
      statusRequests += 1;
      if (outage === 'reset') request.socket.destroy();
      else if (outage === 'not-json') response.writeHead(200, { 'content-type': 'text/html' }).end('<html>down</html>');
      else if (outage === 'wrong-shape')
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"enabled":"yes"}');
      else response.writeHead(500, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // A port nothing listens on: the connection is refused.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    unusedOrigin = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const handlerFor = (config: AgentConfig, selfBaseUrl: string, warnings: string[] = []) =>
    hostHandler(config, { apiKey: 'mordn_test', selfBaseUrl, onWarning: (message) => warnings.push(message) });

  it.each([
    ['a refused connection', 'reset', true],
    ['a reset connection', 'reset', false],
    ['a body that is not JSON', 'not-json', false],
    ['a body of the wrong shape', 'wrong-shape', false],
    ['an error status', 'server-error', false],
  ] as const)(
    '%s answers 503 with the "unavailable now" copy, before the model starts, never a 500',
    async (_name, kind, refused) => {
      outage = kind;
      const warnings: string[] = [];
      const { handler, mock } = handlerFor(ENABLED, refused ? unusedOrigin : origin, warnings);
      const response = await handler.POST(chatRequest(`outage-${kind}`));
      expect(response.status).toBe(503);
      const problem = await readJson(response);
      expect(problem.code).toBe('MANAGED_SANDBOX_UNAVAILABLE');
      expect(problem.detail).toMatch(UNAVAILABLE_NOW);
      expect(problem.detail).not.toMatch(PUBLISH_FIRST);
      expect(mock.doStreamCalls).toHaveLength(0);
      expect(warnings).toEqual([expect.stringContaining('status could not be read')]);
      expect(mcpRequests).toBe(0);
    },
  );

  it('leaves an agent without sandboxes untouched: no status request, a normal answer', async () => {
    outage = 'reset';
    const before = statusRequests;
    const { handler: answering } = hostHandler(
      DISABLED,
      { apiKey: 'mordn_test', selfBaseUrl: origin },
      { model: toolCallingModel([], 'fine').model },
    );
    const response = await answering.POST(chatRequest('outage-disabled'));
    expect(response.status).toBe(200);
    expect(JSON.stringify(await readUiChunks(response))).toContain('fine');
    expect(statusRequests).toBe(before);
  });
});

/** The API's log lines saying the gate was closed, for one request id. */
function gateLines(service: TestService, requestId: string): Array<Record<string, unknown>> {
  return service.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'sandbox gate closed' && line.requestId === requestId);
}

describe('the gate leg in the log', () => {
  const services: TestService[] = [];
  afterAll(async () => {
    await Promise.all(services.map((service) => service.close()));
  });
  const start = async (options: StartTestServiceOptions) => {
    const service = await startTestService({
      ...options,
      environment: {
        MORDN_MODEL: 'openai-compatible:scripted-1',
        MORDN_MODEL_BASE_URL: model.baseUrl,
        ...options.environment,
      },
    });
    services.push(service);
    return service;
  };

  /** A chat turn of an agent whose published config enables sandboxes, under our own request id. */
  async function closedChat(service: TestService, requestId: string) {
    const agent = await createAgentFixture(service.database.db, { published: ENABLED });
    const before = model.requests.length;
    const response = await service.fetch('/v1/chat', {
      method: 'POST',
      headers: { ...agentHeaders(agent.key, 'alice'), 'Content-Type': 'application/json', 'X-Request-Id': requestId },
      body: JSON.stringify(chatBody(requestId, 'hi')),
    });
    expect(response.status).toBe(503);
    expect(model.requests.length).toBe(before);
    return readJson(response);
  }

  it.each([
    ['the operator switch is off', {}, 'operator-switch'],
    [
      'the tenant is not allowed',
      { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_TENANTS: 'ten_other' },
      'tenant-not-allowed',
    ],
  ] as const)('names the leg when %s, and the copy says "unavailable now"', async (_name, environment, leg) => {
    const service = await start({ environment });
    const requestId = `gate-${leg}`;
    const problem = await closedChat(service, requestId);
    expect(problem).toMatchObject({
      code: 'MANAGED_SANDBOX_UNAVAILABLE',
      detail: expect.stringMatching(UNAVAILABLE_NOW),
    });
    expect(gateLines(service, requestId)).toEqual([expect.objectContaining({ level: 30, gate: leg })]);
  });

  it('names the backend when it is not ready, or when its check fails', async () => {
    let readiness: 'no' | 'throw' = 'no';
    const service = await start({
      environment: { MORDN_SANDBOX_ENABLED: 'true' },
      sandboxReadiness: async () => {
        if (readiness === 'throw') throw new Error('probe crashed');
        return false;
      },
    });
    expect((await closedChat(service, 'gate-backend')).detail).toMatch(UNAVAILABLE_NOW);
    expect(gateLines(service, 'gate-backend')).toEqual([expect.objectContaining({ gate: 'backend-not-ready' })]);
    readiness = 'throw';
    expect((await closedChat(service, 'gate-backend-check')).detail).toMatch(UNAVAILABLE_NOW);
    expect(gateLines(service, 'gate-backend-check')).toEqual([
      expect.objectContaining({ gate: 'backend-check-failed' }),
    ]);
  });

  it('says "publish first" for a preview whose published config does not enable sandboxes, and logs that leg', async () => {
    const service = await start({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
    const unpublished = await createAgentFixture(service.database.db);
    const { handler, mock } = hostHandler(
      DISABLED,
      { apiKey: unpublished.key, selfBaseUrl: service.deps.selfBaseUrl as string, requestId: 'gate-preview' },
      { resolvePreviewConfig: async () => ENABLED },
    );
    const response = await handler.POST(chatRequest('gate-preview'));
    expect(response.status).toBe(503);
    const problem = await readJson(response);
    expect(problem.detail).toMatch(PUBLISH_FIRST);
    expect(problem.detail).not.toMatch(UNAVAILABLE_NOW);
    expect(mock.doStreamCalls).toHaveLength(0);
    expect(gateLines(service, 'gate-preview')).toEqual([expect.objectContaining({ gate: 'published-config' })]);
  });
});
