import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { createApiKey } from '../src/auth/api-keys.js';
import type { ChatRequestContext } from '../src/chat/types.js';
import { composeDependencies } from '../src/compose.js';
import { loadConfig } from '../src/config.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { mintSandboxToken, SandboxTokenError } from '../src/hosted/mint-sandbox-token.js';
import { createLogger } from '../src/logger.js';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { workspaceRowsWithoutMeter } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { SANDBOX_TOOLS } from './support/mcp.js';
import { type EraRequest, MCP_ERAS } from './support/mcp-eras.js';
import { adminRequest, agentHeaders, startTestService, type TestService } from './support/service.js';
import { finalValue } from './support/tool-execution.js';
import { upload } from './support/upload.js';

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };
const MAX_SECONDS = 7200;
const TOKEN_SHAPE = /^mordn_mcp_[A-Za-z0-9_-]{43}$/;
const MCP_ACCEPT = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

let service: TestService;
let fixture: AgentFixture;
let mcpUrl: string;
let metadataUrl: string;
let userCounter = 0;

beforeAll(async () => {
  service = await startTestService({
    environment: {
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_CALLS_PER_MINUTE: '1000',
      MORDN_SANDBOX_TOKEN_MAX_SECONDS: String(MAX_SECONDS),
    },
  });
  fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  mcpUrl = `${service.url}/v1/sandbox/mcp`;
  metadataUrl = `${service.url}/.well-known/oauth-protected-resource`;
});
afterAll(() => service.close());

/** A user id no other test uses, so "no workspace for this user" proves a call did nothing. */
const freshUser = (label: string) => `${label}-${++userCounter}`;

function mint(key: string, userId: string, body: unknown = {}): Promise<Response> {
  return service.fetch('/v1/sandbox/tokens', {
    method: 'POST',
    headers: { ...agentHeaders(key, userId), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function mintOk(userId: string, body: unknown = {}, key = fixture.key): Promise<Json> {
  const response = await mint(key, userId, body);
  expect(response.status, JSON.stringify(await response.clone().json())).toBe(201);
  return readJson(response);
}

/** One raw MCP request carrying `bearer` (and an `X-Chat-User` only when given). */
function mcpWith(bearer: string | undefined, request: EraRequest | undefined, userId?: string): Promise<Response> {
  return service.fetch('/v1/sandbox/mcp', {
    method: 'POST',
    headers: {
      ...MCP_ACCEPT,
      ...request?.headers,
      ...(bearer === undefined ? {} : { Authorization: `Bearer ${bearer}` }),
      ...(userId === undefined ? {} : { 'X-Chat-User': userId }),
    },
    body: JSON.stringify(request?.body),
  });
}

const tokenHeaders = (token: string) => ({ Authorization: `Bearer ${token}` });

async function workspacesOf(userId: string) {
  return service.database.db.selectFrom('workspaces').selectAll().where('user_id', '=', userId).execute();
}

/** Everything a tool call leaves behind anywhere: workspaces, leases and rate windows. */
async function sandboxEffects() {
  const { db } = service.database;
  return [
    await workspaceRowsWithoutMeter(service.database),
    await db.selectFrom('workspace_leases').selectAll().orderBy('id').execute(),
    await db.selectFrom('rate_limit_windows').selectAll().orderBy('key').execute(),
  ];
}

/** Files in `userId`'s workspace, listed with the agent key (the service's view of it). */
async function filesOf(userId: string): Promise<string[]> {
  const era = MCP_ERAS[0];
  if (!era) throw new Error('no MCP era');
  const client = await era.connect(mcpUrl, agentHeaders(fixture.key, userId));
  try {
    const { value } = await client.callTool('sandbox_list_files', {});
    return (value.entries as Array<{ name: string }>).map((entry) => entry.name).sort();
  } finally {
    await client.close();
  }
}

async function expectProblem(response: Response, status: number, code: string): Promise<Json> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const problem = await readJson(response);
  expect(problem.code).toBe(code);
  return problem;
}

/** A 401 of the MCP endpoint: the problem and the challenge naming the metadata. */
async function expectTokenRefused(response: Response, code = 'INVALID_TOKEN'): Promise<void> {
  await expectProblem(response, 401, code);
  expect(response.headers.get('www-authenticate')).toMatch(
    new RegExp(`^Bearer resource_metadata="${metadataUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`),
  );
}

describe('POST /v1/sandbox/tokens and DELETE /v1/sandbox/tokens[/:id] (fixed contract)', () => {
  it('mints 201 { id, token, expiresAt, permissions, tools } with the documented defaults, stored hashed', async () => {
    const userId = freshUser('shape');
    const before = Date.now();
    const response = await mint(fixture.key, userId);
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await readJson(response);
    expect(Object.keys(body).sort()).toEqual(['expiresAt', 'id', 'permissions', 'token', 'tools']);
    expect(body.id).toMatch(/^tok_[0-9a-f]{24}$/);
    expect(body.token).toMatch(TOKEN_SHAPE);
    expect(body.permissions).toEqual(['read', 'write']);
    expect(body.tools).toEqual(SANDBOX_TOOLS);
    const lifetime = Date.parse(body.expiresAt) - before;
    expect(lifetime).toBeGreaterThan(15 * 60_000 - 5_000);
    expect(lifetime).toBeLessThanOrEqual(15 * 60_000 + 1_000);

    const row = await service.database.db
      .selectFrom('sandbox_tokens')
      .selectAll()
      .where('id', '=', body.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: userId,
      api_key_id: fixture.keyId,
      audience: mcpUrl,
      permissions: 'read,write',
      tools: null,
      revoked_at: null,
    });
    expect(JSON.stringify(row)).not.toContain(body.token.slice('mordn_mcp_'.length));
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('takes ttlSeconds, a read-only permission set and a tool subset (canonical order)', async () => {
    const before = Date.now();
    const body = await mintOk(freshUser('narrow'), {
      ttlSeconds: MAX_SECONDS,
      permissions: ['read'],
      tools: ['sandbox_read_file', 'sandbox_list_files'],
    });
    expect(body.permissions).toEqual(['read']);
    expect(body.tools).toEqual(['sandbox_list_files', 'sandbox_read_file']);
    expect(Date.parse(body.expiresAt) - before).toBeGreaterThan(MAX_SECONDS * 1000 - 5_000);
    const reordered = await mintOk(freshUser('order'), { permissions: ['write', 'read'] });
    expect(reordered.permissions).toEqual(['read', 'write']);
  });

  it.each([
    [
      'a lifetime above the operator maximum',
      { ttlSeconds: MAX_SECONDS + 1 },
      `at most ${MAX_SECONDS} seconds (MORDN_SANDBOX_TOKEN_MAX_SECONDS)`,
    ],
    ['a lifetime above 24 h', { ttlSeconds: 86_401 }, 'at most 86400 seconds'],
    ['a lifetime below 60 s', { ttlSeconds: 59 }, 'at least 60 seconds'],
    ['a fractional lifetime', { ttlSeconds: 90.5 }, 'ttlSeconds'],
    ['an empty tool list', { tools: [] }, 'tools'],
    ['an unknown tool', { tools: ['sandbox_exec', 'sandbox_rm'] }, 'tools'],
    ['write without read', { permissions: ['write'] }, 'must be ["read"] or ["read","write"]'],
    ['no permission', { permissions: [] }, 'must be ["read"] or ["read","write"]'],
    ['a repeated permission', { permissions: ['read', 'read'] }, 'must be ["read"] or ["read","write"]'],
    ['an unknown field', { userId: 'someone-else' }, 'userId'],
  ])('refuses %s (400 VALIDATION_FAILED), minting nothing', async (_name, body, message) => {
    const userId = freshUser('invalid');
    const problem = await expectProblem(await mint(fixture.key, userId, body), 400, 'VALIDATION_FAILED');
    expect(problem.detail).toContain(message);
    const rows = await service.database.db
      .selectFrom('sandbox_tokens')
      .where('user_id', '=', userId)
      .selectAll()
      .execute();
    expect(rows).toEqual([]);
  });

  it('refuses an agent whose published config does not enable sandboxes (503), minting nothing', async () => {
    const disabled = await createAgentFixture(service.database.db, { published: { schemaVersion: 1 } });
    const userId = freshUser('disabled');
    await expectProblem(await mint(disabled.key, userId), 503, 'MANAGED_SANDBOX_UNAVAILABLE');
    expect(
      await service.database.db.selectFrom('sandbox_tokens').where('user_id', '=', userId).selectAll().execute(),
    ).toEqual([]);
  });

  it("revokes one token (204) and answers 404 for another user's or another agent's token id", async () => {
    const owner = freshUser('owner');
    const { id, token } = await mintOk(owner);
    const other = await createAgentFixture(service.database.db, { published: ENABLED });
    const revokeAs = (key: string, userId: string) =>
      service.fetch(`/v1/sandbox/tokens/${id}`, { method: 'DELETE', headers: agentHeaders(key, userId) });

    await expectProblem(await revokeAs(fixture.key, freshUser('intruder')), 404, 'NOT_FOUND');
    await expectProblem(await revokeAs(other.key, owner), 404, 'NOT_FOUND');
    await expectProblem(
      await service.fetch('/v1/sandbox/tokens/tok_000000000000000000000000', {
        method: 'DELETE',
        headers: agentHeaders(fixture.key, owner),
      }),
      404,
      'NOT_FOUND',
    );
    expect((await mcpWith(token, MCP_ERAS[0]?.discovery())).status).toBe(200);

    const revoked = await revokeAs(fixture.key, owner);
    expect(revoked.status).toBe(204);
    expect(await revoked.text()).toBe('');
    expect((await revokeAs(fixture.key, owner)).status).toBe(204);
  });

  it("revokes all of the user's tokens (204), and only that user's", async () => {
    const userId = freshUser('all');
    const bystander = freshUser('bystander');
    const [first, second, kept] = [await mintOk(userId), await mintOk(userId), await mintOk(bystander)];
    const response = await service.fetch('/v1/sandbox/tokens', {
      method: 'DELETE',
      headers: agentHeaders(fixture.key, userId),
    });
    expect(response.status).toBe(204);
    await expectTokenRefused(await mcpWith(first.token, MCP_ERAS[0]?.discovery()));
    await expectTokenRefused(await mcpWith(second.token, MCP_ERAS[0]?.discovery()));
    expect((await mcpWith(kept.token, MCP_ERAS[0]?.discovery())).status).toBe(200);

    // The next mint purges the user's dead rows: only the new token's row is left.
    const next = await mintOk(userId);
    const rows = await service.database.db
      .selectFrom('sandbox_tokens')
      .select('id')
      .where('user_id', '=', userId)
      .execute();
    expect(rows).toEqual([{ id: next.id }]);
  });
});

describe('discovery of the auth model', () => {
  it.each(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/v1/sandbox/mcp'])(
    'serves RFC 9728 metadata at %s without credentials, naming no authorization server',
    async (path) => {
      const response = await service.fetch(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
      const metadata = await readJson(response);
      expect(metadata).toMatchObject({
        resource: mcpUrl,
        resource_name: 'Mordn sandbox MCP',
        bearer_methods_supported: ['header'],
      });
      expect(metadata).not.toHaveProperty('authorization_servers');
    },
  );

  it('answers a credential-less MCP request 401 with a challenge naming the metadata', async () => {
    const response = await mcpWith(undefined, MCP_ERAS[0]?.discovery());
    await expectProblem(response, 401, 'MISSING_API_KEY');
    expect(response.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    // The metadata's resource is the endpoint itself, and the endpoint names exactly that metadata.
    expect((await readJson(await service.fetch('/.well-known/oauth-protected-resource'))).resource).toBe(mcpUrl);
  });
});

describe.each(MCP_ERAS)('sandbox tokens on /v1/sandbox/mcp: $name', (era) => {
  it("serve discovery and calls without X-Chat-User, in the token user's workspace only", async () => {
    const alice = freshUser('alice');
    const bob = freshUser('bob');
    const { token } = await mintOk(alice);
    const client = await era.connect(mcpUrl, tokenHeaders(token));
    try {
      expect(await client.listToolNames()).toEqual(SANDBOX_TOOLS);
      const written = await client.callTool('sandbox_write_file', { path: 'alice.txt', content: 'mine' });
      expect(written.isError).toBe(false);
      const read = await client.callTool('sandbox_read_file', { path: 'alice.txt' });
      expect(read.value.content).toBe('mine');

      // Arguments cannot name another user: the tools' schemas are strict.
      const before = await sandboxEffects();
      const smuggled = await client.callTool('sandbox_write_file', { path: 'x.txt', content: 'x', userId: bob });
      expect(smuggled).toMatchObject({ isError: true, value: { error: { code: 'INVALID_INPUT' } } });
      const [workspacesBefore] = before;
      expect((await sandboxEffects())[0]).toEqual(workspacesBefore);
    } finally {
      await client.close();
    }
    const [workspace] = await workspacesOf(alice);
    expect(workspace).toMatchObject({ tenant_id: fixture.tenantId, agent_id: fixture.agentId, user_id: alice });
    expect(await workspacesOf(bob)).toEqual([]);
    expect(await filesOf(alice)).toContain('alice.txt');
    expect(await filesOf(bob)).not.toContain('alice.txt');
  });

  it('accept an X-Chat-User naming the token user and refuse another (400), running nothing', async () => {
    const alice = freshUser('alice');
    const bob = freshUser('bob');
    const { token } = await mintOk(alice);
    expect((await mcpWith(token, era.discovery(), alice)).status).toBe(200);

    const before = await sandboxEffects();
    const response = await mcpWith(token, era.call('sandbox_exec', { command: 'touch canary' }), bob);
    const problem = await expectProblem(response, 400, 'INVALID_USER');
    expect(problem.detail).toContain('another user than the sandbox token');
    expect(await sandboxEffects()).toEqual(before);
    expect(await workspacesOf(bob)).toEqual([]);
    expect(await workspacesOf(alice)).toEqual([]);
  });

  it.each([
    ['expired', 'expired'],
    ['revoked', 'revoked'],
    ['minted for another audience', 'audience'],
    ['minted by a revoked agent key', 'key'],
  ] as const)('refuse a token %s on the very next request (401), running nothing', async (_name, how) => {
    const userId = freshUser(how);
    const issued = await createApiKey(service.database.db, fixture.agentId, ['read', 'write']);
    const { id, token } = await mintOk(userId, { ttlSeconds: 60 }, issued.key);
    expect((await mcpWith(token, era.discovery())).status).toBe(200);

    const { db } = service.database;
    if (how === 'expired')
      await db
        .updateTable('sandbox_tokens')
        .set({ expires_at: Date.now() - 1 })
        .where('id', '=', id)
        .execute();
    if (how === 'audience') {
      await db
        .updateTable('sandbox_tokens')
        .set({ audience: 'https://other.example/v1/sandbox/mcp' })
        .where('id', '=', id)
        .execute();
    }
    if (how === 'revoked') {
      const revoked = await service.fetch(`/v1/sandbox/tokens/${id}`, {
        method: 'DELETE',
        headers: agentHeaders(fixture.key, userId),
      });
      expect(revoked.status).toBe(204);
    }
    if (how === 'key')
      expect((await service.fetch(`/v1/admin/keys/${issued.id}`, adminRequest('DELETE'))).status).toBe(204);

    const before = await sandboxEffects();
    await expectTokenRefused(await mcpWith(token, era.call('sandbox_exec', { command: 'touch canary' })));
    await expectTokenRefused(await mcpWith(token, era.discovery()));
    await expect(era.connect(mcpUrl, tokenHeaders(token))).rejects.toThrow();
    expect(await sandboxEffects()).toEqual(before);
    expect(await workspacesOf(userId)).toEqual([]);
  });

  it('refuse a token presented to the service once published under another URL (same database)', async () => {
    const { token } = await mintOk(freshUser('moved'));
    const moved = 'https://moved.example';
    const config = loadConfig({ ...service.database.target.environment, MORDN_PUBLIC_URL: moved });
    const deps = await composeDependencies(config, {
      logger: createLogger({ level: 'silent' }),
      database: service.database,
    });
    try {
      const response = await createApp(deps).request('/v1/sandbox/mcp', {
        method: 'POST',
        headers: { ...MCP_ACCEPT, ...era.discovery().headers, ...tokenHeaders(token) },
        body: JSON.stringify(era.discovery().body),
      });
      await expectProblem(response, 401, 'INVALID_TOKEN');
      expect(response.headers.get('www-authenticate')).toContain(
        `resource_metadata="${moved}/.well-known/oauth-protected-resource"`,
      );
    } finally {
      await deps.sandbox?.backend.close?.();
    }
    // Where it was minted, it still works.
    expect((await mcpWith(token, era.discovery())).status).toBe(200);
  });

  it('refuse a tampered token and a JWT with alg none (401), running nothing', async () => {
    const userId = freshUser('tampered');
    const { token } = await mintOk(userId);
    const last = token.at(-1) === 'A' ? 'B' : 'A';
    const tampered = `${token.slice(0, -1)}${last}`;
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({
      sub: userId,
      aud: mcpUrl,
      tenant: fixture.tenantId,
      agent: fixture.agentId,
      permissions: ['read', 'write'],
      exp: Math.floor(Date.now() / 1000) + 3600,
    })}.`;
    expect(unsigned.startsWith('eyJ')).toBe(true);

    const before = await sandboxEffects();
    await expectTokenRefused(await mcpWith(tampered, era.call('sandbox_exec', { command: 'touch canary' })));
    await expectTokenRefused(
      await mcpWith(unsigned, era.call('sandbox_exec', { command: 'touch canary' })),
      'INVALID_API_KEY',
    );
    await expectTokenRefused(
      await mcpWith(unsigned, era.call('sandbox_exec', { command: 'touch canary' }), userId),
      'INVALID_API_KEY',
    );
    expect(await sandboxEffects()).toEqual(before);
    expect(await workspacesOf(userId)).toEqual([]);
    // The genuine token still works: refusing the forgeries did not disturb it.
    expect((await mcpWith(token, era.discovery())).status).toBe(200);
  });

  it('let a read-only token discover but refuse its tools/call (403), provisioning nothing', async () => {
    const userId = freshUser('reader');
    const { token } = await mintOk(userId, { permissions: ['read'] });
    const client = await era.connect(mcpUrl, tokenHeaders(token));
    try {
      expect(await client.listToolNames()).toEqual(SANDBOX_TOOLS);
    } finally {
      await client.close();
    }
    const before = await sandboxEffects();
    const response = await mcpWith(token, era.call('sandbox_exec', { command: 'touch canary' }));
    const problem = await expectProblem(response, 403, 'INSUFFICIENT_PERMISSION');
    expect(problem.detail).toBe('This sandbox token lacks the "write" permission required by this operation.');
    expect(await sandboxEffects()).toEqual(before);
    expect(await workspacesOf(userId)).toEqual([]);
  });

  it('list only the tools a token names and refuse the others as unknown, provisioning nothing', async () => {
    const userId = freshUser('subset');
    const { token } = await mintOk(userId, { tools: ['sandbox_list_files', 'sandbox_read_file'] });
    const client = await era.connect(mcpUrl, tokenHeaders(token));
    try {
      expect(await client.listToolNames()).toEqual(['sandbox_list_files', 'sandbox_read_file']);
      const before = await sandboxEffects();
      const refused = await client.callTool('sandbox_exec', { command: 'touch canary' });
      expect(refused).toMatchObject({ isError: true, value: { error: { code: 'UNKNOWN_TOOL' } } });
      expect(JSON.stringify(refused.value)).not.toContain('sandbox_exec');
      expect(await sandboxEffects()).toEqual(before);
      expect(await workspacesOf(userId)).toEqual([]);
      expect((await client.callTool('sandbox_list_files', {})).isError).toBe(false);
    } finally {
      await client.close();
    }
    expect(await workspacesOf(userId)).toHaveLength(1);
  });

  it("re-check the agent's gate on every tools/call: unpublishing sandboxes refuses a live token's calls", async () => {
    const agent = await createAgentFixture(service.database.db, { published: ENABLED });
    const userId = freshUser('gate');
    const { token } = await mintOk(userId, {}, agent.key);
    const put = await service.fetch(
      `/v1/admin/agents/${agent.agentId}/config`,
      adminRequest('PUT', { schemaVersion: 1 }),
    );
    expect(put.status).toBe(200);
    expect((await service.fetch(`/v1/admin/agents/${agent.agentId}/config/publish`, adminRequest('POST'))).status).toBe(
      200,
    );

    const client = await era.connect(mcpUrl, tokenHeaders(token));
    try {
      const refused = await client.callTool('sandbox_exec', { command: 'touch canary' });
      expect(refused).toMatchObject({ isError: true, value: { error: { code: 'SANDBOX_UNAVAILABLE' } } });
    } finally {
      await client.close();
    }
    expect(await workspacesOf(userId)).toEqual([]);
  });
});

describe('a sandbox token anywhere but /v1/sandbox/mcp', () => {
  it.each([
    ['GET', '/v1/me'],
    ['GET', '/v1/sandbox/status'],
    ['GET', '/v1/bootstrap'],
    ['POST', '/v1/chat'],
    ['POST', '/v1/uploads/resign'],
    ['POST', '/v1/sandbox/tokens'],
    ['DELETE', '/v1/sandbox/tokens'],
  ])('is refused on %s %s (401 INVALID_API_KEY), with or without X-Chat-User', async (method, path) => {
    const userId = freshUser('elsewhere');
    const { token } = await mintOk(userId);
    for (const headers of [tokenHeaders(token), agentHeaders(token, userId)]) {
      const response = await service.fetch(path, {
        method,
        headers: { ...headers, 'Content-Type': 'application/json' },
        ...(method === 'GET' ? {} : { body: '{}' }),
      });
      await expectProblem(response, 401, 'INVALID_API_KEY');
    }
    // Nothing it was refused on touched the user's tokens either.
    expect((await mcpWith(token, MCP_ERAS[0]?.discovery())).status).toBe(200);
  });

  it('is refused on POST /v1/uploads (401), storing nothing', async () => {
    const userId = freshUser('uploader');
    const { token } = await mintOk(userId);
    const response = await upload(service, token, { bytes: 'a,b\n', filename: 'a.csv', type: 'text/csv' }, userId);
    await expectProblem(response, 401, 'INVALID_API_KEY');
    expect(
      await service.database.db.selectFrom('stored_files').selectAll().where('user_id', '=', userId).execute(),
    ).toEqual([]);
  });
});

describe('hosted helpers', () => {
  const hostedContext = (userId: string): ChatRequestContext => ({
    request: new Request('http://host.example/api/chat'),
    userId,
    chatId: 'c1',
    config: ENABLED,
    abortSignal: new AbortController().signal,
  });
  const callOptions = { toolCallId: 't', messages: [], abortSignal: new AbortController().signal };
  const tokenRows = (userId: string) =>
    service.database.db.selectFrom('sandbox_tokens').selectAll().where('user_id', '=', userId).execute();

  it("mintSandboxToken hands a third-party MCP client one user's workspace, at mcpUrl, without the agent key", async () => {
    const userId = freshUser('third-party');
    const minted = await mintSandboxToken({
      apiKey: fixture.key,
      selfBaseUrl: service.url,
      userId,
      ttlSeconds: 120,
      tools: ['sandbox_exec', 'sandbox_list_files'],
    });
    expect(minted).toMatchObject({
      mcpUrl,
      tools: ['sandbox_exec', 'sandbox_list_files'],
      permissions: ['read', 'write'],
    });
    expect(minted.token).toMatch(TOKEN_SHAPE);
    const client = await MCP_ERAS[0]?.connect(minted.mcpUrl, tokenHeaders(minted.token));
    try {
      expect(await client?.listToolNames()).toEqual(['sandbox_exec', 'sandbox_list_files']);
      const ran = await client?.callTool('sandbox_exec', { command: 'echo third-party > note.txt && cat note.txt' });
      expect(ran?.value.stdout).toBe('third-party\n');
    } finally {
      await client?.close();
    }
    expect(await filesOf(userId)).toContain('note.txt');

    const refused = mintSandboxToken({ apiKey: fixture.key, selfBaseUrl: service.url, userId, ttlSeconds: 30 });
    await expect(refused).rejects.toBeInstanceOf(SandboxTokenError);
    await expect(refused).rejects.toThrow(/400 VALIDATION_FAILED/);
  });

  it("createHostedSandboxes({ mcpCredential: 'userToken' }) mints once per user and calls MCP with the token", async () => {
    const userId = freshUser('hosted');
    const sandboxes = createHostedSandboxes({
      apiKey: fixture.key,
      selfBaseUrl: service.url,
      mcpCredential: 'userToken',
      userTokenTtlSeconds: 600,
    });
    const build = () =>
      sandboxes.buildTools(hostedContext(userId), {
        abortSignal: new AbortController().signal,
        onArtifact: () => undefined,
      });

    const first = await build();
    try {
      expect(Object.keys(first.tools).sort()).toEqual([...SANDBOX_TOOLS].sort());
      expect(
        JSON.stringify(
          await finalValue(first.tools.sandbox_exec?.execute?.({ command: 'echo via-token' }, callOptions)),
        ),
      ).toContain('via-token');
    } finally {
      await first.close();
    }
    const second = await build();
    await second.close();
    const rows = await tokenRows(userId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ api_key_id: fixture.keyId, revoked_at: null });

    // The MCP connection carries the token, not the key: revoking the user's tokens stops it…
    const third = await build();
    try {
      const revoked = await service.fetch('/v1/sandbox/tokens', {
        method: 'DELETE',
        headers: agentHeaders(fixture.key, userId),
      });
      expect(revoked.status).toBe(204);
      await expect(
        finalValue(third.tools.sandbox_exec?.execute?.({ command: 'echo after' }, callOptions)),
      ).rejects.toThrow();
    } finally {
      await third.close();
    }
    // …the next connection fails on the revoked token and is not reused; the one after mints anew.
    await expect(build()).rejects.toThrow();
    const fresh = await build();
    await fresh.close();
    expect((await tokenRows(userId)).filter((row) => row.revoked_at === null)).toHaveLength(1);
  });
});

const context = () => ({ service, fixture });
describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/sandbox/tokens',
    permission: 'write',
    rejectsAnonymous: true,
    headers: { 'Content-Type': 'application/json' },
    body: '{}',
    effects: () => service.database.db.selectFrom('sandbox_tokens').selectAll().orderBy('id').execute(),
  },
  context,
);
describeAgentAuth(
  {
    method: 'DELETE',
    path: '/v1/sandbox/tokens/tok_000000000000000000000000',
    permission: 'write',
    rejectsAnonymous: true,
  },
  context,
);
describeAgentAuth(
  { method: 'DELETE', path: '/v1/sandbox/tokens', permission: 'write', rejectsAnonymous: true },
  context,
);
