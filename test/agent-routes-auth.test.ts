import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../src/app.js';
import { packageRoot } from '../src/package-root.js';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { workspaceRowsWithoutMeter } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { INITIALIZE, toolCall } from './support/mcp.js';
import { MODERN_ERA } from './support/mcp-eras.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { chatBody } from './support/ui-stream.js';

let model: ScriptedModelServer;
let service: TestService;
let fixture: AgentFixture;

const HISTORY_CHAT = 'chat-auth-history';
const DELETED_CHAT = 'chat-auth-delete';
const JSON_HEADERS = { 'Content-Type': 'application/json' };
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
/** The MCP endpoint's 401s point MCP clients at its protected-resource metadata. */
const MCP_CHALLENGE = (at: TestService) => `Bearer resource_metadata="${at.url}/.well-known/oauth-protected-resource"`;

/** Every stored chat, whole: a refused request must leave each row exactly as it was. */
const chatRows = () =>
  service.database.db.selectFrom('chats').selectAll().orderBy('user_id').orderBy('chat_id').execute();

/** Everything a tool call could leave behind: workspaces (less the metering's bookkeeping), their leases, rate windows. */
const sandboxRows = async () => [
  await workspaceRowsWithoutMeter(service.database),
  await service.database.db.selectFrom('workspace_leases').selectAll().execute(),
  await service.database.db.selectFrom('rate_limit_windows').selectAll().execute(),
];

async function saveChat(chatId: string): Promise<void> {
  const response = await service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key), ...JSON_HEADERS },
    body: JSON.stringify(chatBody(chatId, 'hello')),
  });
  expect(response.status).toBe(200);
  await response.text();
}

beforeAll(async () => {
  model = await startScriptedModelServer(() => ({ text: 'hi' }));
  service = await startTestService({
    environment: { MORDN_MODEL: 'openai-compatible:scripted-1', MORDN_MODEL_BASE_URL: model.baseUrl },
  });
  fixture = await createAgentFixture(service.database.db, { published: { schemaVersion: 1 } });
  await saveChat(HISTORY_CHAT);
  await saveChat(DELETED_CHAT);
});
afterAll(async () => {
  await service.close();
  await model.close();
});

const context = () => ({ service, fixture });

describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/chat',
    permission: 'write',
    headers: JSON_HEADERS,
    body: JSON.stringify(chatBody('chat-auth-turn', 'hello')),
    effects: chatRows,
  },
  context,
);

describeAgentAuth({ method: 'GET', path: `/v1/chats/${HISTORY_CHAT}`, permission: 'read' }, context);

describeAgentAuth({ method: 'GET', path: `/v1/chat/${HISTORY_CHAT}/stream`, permission: 'read' }, context);

/** A refused stop leaves the chats and their answers as they were. */
const chatAndAnswerRows = async () => [
  await chatRows(),
  await service.database.db.selectFrom('chat_answers').selectAll().orderBy('answer_id').execute(),
];

describeAgentAuth(
  { method: 'POST', path: `/v1/chat/${HISTORY_CHAT}/stop`, permission: 'write', effects: chatAndAnswerRows },
  context,
);

describeAgentAuth(
  { method: 'DELETE', path: `/v1/chats/${DELETED_CHAT}`, permission: 'write', effects: chatRows },
  context,
);

describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/sandbox/mcp',
    permission: 'read',
    rejectsAnonymous: true,
    headers: MCP_HEADERS,
    challenge: MCP_CHALLENGE,
    body: JSON.stringify(INITIALIZE),
    effects: sandboxRows,
  },
  context,
);

describeAgentAuth(
  { method: 'GET', path: '/v1/sandbox/usage', permission: 'read', rejectsAnonymous: true, effects: sandboxRows },
  context,
);

describe('agent authentication of a tool call', () => {
  describeAgentAuth(
    {
      method: 'POST',
      path: '/v1/sandbox/mcp',
      permission: 'write',
      rejectsAnonymous: true,
      headers: MCP_HEADERS,
      challenge: MCP_CHALLENGE,
      body: JSON.stringify(toolCall('sandbox_exec', { command: 'touch /workspace/should-not-exist' })),
      effects: sandboxRows,
    },
    context,
  );
});

/** The same two requests in the stateless 2026-07-28 era: the same checks, in the same order. */
const MODERN_DISCOVERY = MODERN_ERA.discovery();
const MODERN_CALL = MODERN_ERA.call('sandbox_exec', { command: 'touch /workspace/should-not-exist' });

describe('agent authentication of 2026-07-28 discovery', () => {
  describeAgentAuth(
    {
      method: 'POST',
      path: '/v1/sandbox/mcp',
      permission: 'read',
      rejectsAnonymous: true,
      headers: { ...MCP_HEADERS, ...MODERN_DISCOVERY.headers },
      challenge: MCP_CHALLENGE,
      body: JSON.stringify(MODERN_DISCOVERY.body),
      effects: sandboxRows,
    },
    context,
  );
});

describe('agent authentication of a 2026-07-28 tool call', () => {
  describeAgentAuth(
    {
      method: 'POST',
      path: '/v1/sandbox/mcp',
      permission: 'write',
      rejectsAnonymous: true,
      headers: { ...MCP_HEADERS, ...MODERN_CALL.headers },
      challenge: MCP_CHALLENGE,
      body: JSON.stringify(MODERN_CALL.body),
      effects: sandboxRows,
    },
    context,
  );
});

/** `{ method, path }` of each `describeAgentAuth({ method, path, … })` call in the test sources. */
function routesJoiningTheSuite(): Array<{ method: string; path: string; file: string }> {
  const directory = path.join(packageRoot(), 'test');
  const joined: Array<{ method: string; path: string; file: string }> = [];
  for (const file of readdirSync(directory).filter((name) => name.endsWith('.test.ts'))) {
    const source = readFileSync(path.join(directory, file), 'utf8');
    for (const call of source.split('describeAgentAuth(').slice(1)) {
      // The route object comes first in the call, method and path first in the object.
      const route = call.slice(0, 400);
      const method = /method: '([A-Z]+)'/.exec(route)?.[1];
      const routePath = /path: [`']([^`']+)[`']/.exec(route)?.[1];
      if (method && routePath) joined.push({ method, path: routePath, file });
    }
  }
  return joined;
}

describe('the shared agent authentication suite', () => {
  it('runs against every agent route the route schemas declare', () => {
    const document = buildOpenApiDocument(service.app) as { paths: Record<string, Record<string, unknown>> };
    const agentRoutes: Array<{ method: string; template: string }> = [];
    for (const [template, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const security = (operation as { security?: Array<Record<string, unknown>> }).security ?? [];
        if (security.some((scheme) => 'agentKey' in scheme)) {
          agentRoutes.push({ method: method.toUpperCase(), template });
        }
      }
    }
    expect(agentRoutes.length).toBeGreaterThanOrEqual(10);
    const joined = routesJoiningTheSuite();
    const uncovered = agentRoutes.filter(({ method, template }) => {
      // `/v1/chats/{chatId}` matches `/v1/chats/chat-auth-history`; `${…}` stands for a segment.
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      return !joined.some(
        (route) => route.method === method && pattern.test(route.path.replace(/\$\{[^}]+\}/g, 'segment')),
      );
    });
    expect(uncovered).toEqual([]);
  });
});
