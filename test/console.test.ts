import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpiredConsoleSessions } from '../src/admin/console-sessions.js';
import { packageRoot } from '../src/package-root.js';
import { type Json, readJson } from './support/json.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn, ScriptedModelServer } from './support/scripted-model-server.js';
import { adminRequest, startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';

const PUBLISH_FIRST =
  'Managed sandboxes are not available for this agent: turn on "Enable sandboxes" and publish the agent first.';
const CANARY = 'console-preview-canary';

interface SignedIn {
  cookie: string;
  setCookie: string;
  sessionId: string;
  csrfToken: string;
}

async function signIn(service: TestService, token = TEST_ADMIN_TOKEN): Promise<SignedIn> {
  const response = await service.fetch('/console/api/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  expect(response.status).toBe(200);
  const setCookie = response.headers.get('set-cookie') ?? '';
  const body = await readJson(response);
  return { cookie: setCookie.split(';')[0] as string, setCookie, sessionId: body.sessionId, csrfToken: body.csrfToken };
}

function withSession(session: SignedIn, init: RequestInit & { csrf?: boolean } = {}): RequestInit {
  const { csrf = true, ...rest } = init;
  return {
    ...rest,
    headers: {
      Cookie: session.cookie,
      ...(rest.body === undefined || rest.body instanceof FormData ? {} : { 'Content-Type': 'application/json' }),
      ...(csrf ? { 'X-CSRF-Token': session.csrfToken } : {}),
      ...((rest.headers as Record<string, string> | undefined) ?? {}),
    },
  };
}

async function count(service: TestService, table: 'tenants' | 'console_sessions' | 'sandbox_tokens' | 'workspaces') {
  const row = await service.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

describe('the web console without MORDN_ADMIN_TOKEN', () => {
  it('does not exist', async () => {
    const service = await startTestService({ environment: { MORDN_ADMIN_TOKEN: '' } });
    try {
      for (const route of ['/console', '/console/api/session', '/console/api/status']) {
        expect((await service.fetch(route)).status).toBe(404);
      }
      const signIn = await service.fetch('/console/api/session', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: 'anything' }),
      });
      expect(signIn.status).toBe(404);
    } finally {
      await service.close();
    }
  });
});

describe('console sessions', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(() => service.close());

  it('refuses a wrong admin token with nothing stored and no cookie', async () => {
    const before = await count(service, 'console_sessions');
    const response = await service.fetch('/console/api/session', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: `${TEST_ADMIN_TOKEN}x` }),
    });
    expect(response.status).toBe(401);
    expect((await readJson(response)).code).toBe('INVALID_ADMIN_TOKEN');
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await count(service, 'console_sessions')).toBe(before);
  });

  it('exchanges the token for an HttpOnly, SameSite=Strict cookie whose secret only the database digest knows', async () => {
    const session = await signIn(service);
    expect(session.setCookie).toMatch(/^mordn_console=[A-Za-z0-9_-]{43};/);
    expect(session.setCookie).toMatch(/; HttpOnly/);
    expect(session.setCookie).toMatch(/; SameSite=Strict/);
    expect(session.setCookie).toMatch(/; Path=\//);
    expect(session.setCookie).toMatch(/; Max-Age=28800/);
    // Plain HTTP here: a Secure cookie would never come back.
    expect(session.setCookie).not.toMatch(/Secure/);
    expect(session.sessionId).toMatch(/^cs_[0-9a-f]{24}$/);

    const secret = session.cookie.split('=')[1] as string;
    const rows = await service.database.db.selectFrom('console_sessions').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(TEST_ADMIN_TOKEN);

    const current = await service.fetch('/console/api/session', withSession(session, { csrf: false }));
    expect(current.status).toBe(200);
    expect(current.headers.get('cache-control')).toBe('no-store');
    expect(await readJson(current)).toMatchObject({ sessionId: session.sessionId, csrfToken: session.csrfToken });
  });

  it('secures the cookie when the service is published over HTTPS', async () => {
    const https = await startTestService({ environment: { MORDN_PUBLIC_URL: 'https://console.example.com' } });
    try {
      const session = await signIn(https);
      expect(session.setCookie).toMatch(/; Secure/);
    } finally {
      await https.close();
    }
  });

  it('opens the admin API to the cookie, with writes needing the CSRF token', async () => {
    const session = await signIn(service);
    const list = await service.fetch('/v1/admin/tenants', withSession(session, { csrf: false }));
    expect(list.status).toBe(200);

    const tenants = await count(service, 'tenants');
    for (const csrf of [undefined, 'wrong-token', `${session.csrfToken}x`]) {
      const refused = await service.fetch(
        '/v1/admin/tenants',
        withSession(session, {
          method: 'POST',
          body: JSON.stringify({ name: 'Forged' }),
          csrf: false,
          ...(csrf === undefined ? {} : { headers: { 'X-CSRF-Token': csrf } }),
        }),
      );
      expect(refused.status).toBe(403);
      expect((await readJson(refused)).code).toBe('CSRF_FAILED');
    }
    expect(await count(service, 'tenants')).toBe(tenants);

    const created = await service.fetch(
      '/v1/admin/tenants',
      withSession(session, { method: 'POST', body: JSON.stringify({ name: 'From the console' }) }),
    );
    expect(created.status).toBe(201);
    const tenant = await readJson(created);

    const audit = await readJson(await service.fetch('/v1/admin/audit?limit=5', adminRequest('GET')));
    const row = audit.items.find(
      (item: Json) => item.target.tenantId === undefined && item.route === '/v1/admin/tenants',
    );
    expect(row).toMatchObject({ actor: `console:${session.sessionId}`, method: 'POST', status: 201, outcome: 'ok' });
    const signInRow = audit.items.find(
      (item: Json) => item.route === '/console/api/session' && item.actor === `console:${session.sessionId}`,
    );
    expect(signInRow).toMatchObject({ method: 'POST', status: 200 });
    expect(JSON.stringify(audit)).not.toContain(session.cookie.split('=')[1]);
    expect(tenant.name).toBe('From the console');
  });

  it('still takes the bearer token, and a cookie never rescues a wrong one', async () => {
    const session = await signIn(service);
    expect((await service.fetch('/v1/admin/tenants', adminRequest('GET'))).status).toBe(200);
    const wrong = await service.fetch('/v1/admin/tenants', {
      headers: { Cookie: session.cookie, Authorization: 'Bearer not-the-admin-token' },
    });
    expect(wrong.status).toBe(401);
    expect((await service.fetch('/v1/admin/tenants', { headers: { Cookie: 'mordn_console=forged' } })).status).toBe(
      401,
    );
  });

  it('ends at its expiry on every route, and sign-out ends it and clears the cookie', async () => {
    const expired = await signIn(service);
    await service.database.db
      .updateTable('console_sessions')
      .set({ expires_at: Date.now() - 1 })
      .where('id', '=', expired.sessionId)
      .execute();
    const refused = await service.fetch('/console/api/session', withSession(expired));
    expect(refused.status).toBe(401);
    expect((await readJson(refused)).code).toBe('CONSOLE_SIGNED_OUT');
    expect((await service.fetch('/v1/admin/tenants', withSession(expired))).status).toBe(401);

    const session = await signIn(service);
    const noCsrf = await service.fetch('/console/api/session', withSession(session, { method: 'DELETE', csrf: false }));
    expect(noCsrf.status).toBe(403);
    const out = await service.fetch('/console/api/session', withSession(session, { method: 'DELETE' }));
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^mordn_console=; Max-Age=0; Path=\//);
    expect((await service.fetch('/console/api/session', withSession(session))).status).toBe(401);
    expect((await service.fetch('/v1/admin/tenants', withSession(session))).status).toBe(401);
    // The expired session was swept by the second sign-in.
    const left = await service.database.db.selectFrom('console_sessions').select('id').execute();
    expect(left.map((row) => row.id)).not.toContain(expired.sessionId);
  });

  it("reports the operator's status to a signed-in console only", async () => {
    expect((await service.fetch('/console/api/status')).status).toBe(401);
    const session = await signIn(service);
    const status = await readJson(await service.fetch('/console/api/status', withSession(session)));
    expect(status).toMatchObject({
      readiness: { status: 'ready', checks: { database: 'ok' } },
      sandbox: { operatorEnabled: false, backend: null, containment: null },
      storage: { driver: 'fs' },
      database: { dialect: service.database.dialect },
      model: { configured: false, provider: null, modelId: null },
    });
    expect(status.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.runIf(existsSync(path.join(packageRoot(), 'dist', 'console', 'index.html')))(
    'serves the built pages under a strict CSP, with no inline script',
    async () => {
      const page = await service.fetch('/console');
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      const html = await page.text();
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(asset).toBeDefined();
      const script = await service.fetch(asset as string);
      expect(script.status).toBe(200);
      expect(script.headers.get('cache-control')).toContain('immutable');
      expect((await service.fetch('/console/assets/missing.js')).status).toBe(404);
    },
  );
});

function previewScript(request: ChatCompletionRequest): ModelTurn {
  const toolResults = request.messages.filter((message) => message.role === 'tool');
  if (toolResults.length === 0) {
    // Its first line shows live before the command ends: progress runs through the in-process transport too.
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo ${CANARY}; sleep 0.6; id -un` } }] };
  }
  return { text: 'The draft ran it.' };
}

describe('the console preview chat', () => {
  let service: TestService;
  let agentId: string;
  let model: ScriptedModelServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const started = await startScriptedChatService(previewScript, {
      published: { schemaVersion: 1, instructions: 'Published instructions.' },
      environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
    });
    ({ service, close, model } = started);
    agentId = started.fixture.agentId;
  });
  afterAll(() => close());

  it('runs the draft, shows the publish-first 503 until the sandbox is published, then runs a sandboxed tool', async () => {
    const session = await signIn(service);
    const previewUser = `console-preview:${session.sessionId}`;
    const route = `/console/api/agents/${agentId}/preview`;
    // The draft turns sandboxes on; the published config does not.
    const draft = await service.fetch(
      `/v1/admin/agents/${agentId}/config`,
      withSession(session, {
        method: 'PUT',
        body: JSON.stringify({
          schemaVersion: 1,
          instructions: 'Draft instructions.',
          runtime: { sandbox: { enabled: true } },
        }),
      }),
    );
    expect(draft.status).toBe(200);

    const bootstrap = await service.fetch(`${route}?bootstrap`, withSession(session, { csrf: false }));
    expect(bootstrap.status).toBe(200);
    // The picker follows the published config: images only until sandboxes are published.
    expect((await readJson(bootstrap)).features.attachments).toMatchObject({ enabled: true, accept: ['image/*'] });

    // A chat nothing was sent in yet is empty rather than missing: the console names its preview
    // chat before the first message and loads it on every mount, so this must not be a 404.
    const unstarted = await service.fetch(`${route}?chatId=preview-1`, withSession(session, { csrf: false }));
    expect(unstarted.status).toBe(200);
    expect(await readJson(unstarted)).toEqual({ id: 'preview-1', messages: [] });

    const noCsrf = await service.fetch(
      route,
      withSession(session, { method: 'POST', body: JSON.stringify(chatBody('preview-1', 'hi')), csrf: false }),
    );
    expect(noCsrf.status).toBe(403);

    const before = await service.fetch(
      route,
      withSession(session, { method: 'POST', body: JSON.stringify(chatBody('preview-1', 'run it')) }),
    );
    expect(before.status).toBe(503);
    const problem = await readJson(before);
    expect(problem).toMatchObject({ code: 'MANAGED_SANDBOX_UNAVAILABLE', detail: PUBLISH_FIRST });
    expect(await count(service, 'workspaces')).toBe(0);

    const published = await service.fetch(
      `/v1/admin/agents/${agentId}/config/publish`,
      withSession(session, { method: 'POST' }),
    );
    expect(published.status).toBe(200);
    const republished = await readJson(
      await service.fetch(`${route}?bootstrap`, withSession(session, { csrf: false })),
    );
    expect(republished.features.attachments.accept).toEqual(expect.arrayContaining(['text/csv', '.csv']));
    expect(republished.features.attachments.maxBytes).toBe(10 * 1024 * 1024);
    // A newer draft, still with sandboxes: the preview runs it rather than what is published.
    const second = await service.fetch(
      `/v1/admin/agents/${agentId}/config`,
      withSession(session, {
        method: 'PUT',
        body: JSON.stringify({
          schemaVersion: 1,
          instructions: 'Second draft.',
          runtime: { sandbox: { enabled: true } },
        }),
      }),
    );
    expect(second.status).toBe(200);

    const after = await service.fetch(
      route,
      withSession(session, { method: 'POST', body: JSON.stringify(chatBody('preview-1', 'run it')) }),
    );
    expect(after.status).toBe(200);
    const chunks = await readUiChunks(after);
    const outputs = chunks.filter((chunk) => chunk.type === 'tool-output-available');
    expect(outputs.at(-1)?.preliminary).toBeUndefined();
    expect(JSON.stringify(outputs.at(-1))).toContain(CANARY);
    expect(outputs[0]).toMatchObject({
      preliminary: true,
      output: { output: [{ stream: 'stdout', text: `${CANARY}\n` }] },
    });
    expect(chunks.some((chunk) => chunk.type === 'text-delta' && chunk.delta.includes('The draft ran it.'))).toBe(true);
    // The model was given the draft's instructions, not the published ones.
    const system = JSON.stringify(model.requests.at(-1)?.messages.filter((message) => message.role === 'system'));
    expect(system).toContain('Second draft.');
    expect(system).not.toContain('Draft instructions.');

    // Its sandbox calls carried a short-lived token of the preview user, issued to the session.
    const tokens = await service.database.db
      .selectFrom('sandbox_tokens')
      .selectAll()
      .where('user_id', '=', previewUser)
      .execute();
    expect(tokens).toHaveLength(1);
    expect(tokens[0]).toMatchObject({ agent_id: agentId, api_key_id: null, console_session_id: session.sessionId });
    expect(Number(tokens[0]?.expires_at) - Number(tokens[0]?.created_at)).toBe(300_000);
    const workspaces = await service.database.db
      .selectFrom('workspaces')
      .select('user_id')
      .where('agent_id', '=', agentId)
      .execute();
    expect(workspaces.map((row) => row.user_id)).toEqual([previewUser]);

    const history = await readJson(
      await service.fetch(`${route}?chatId=preview-1`, withSession(session, { csrf: false })),
    );
    expect(history.messages.map((message: Json) => message.role)).toEqual(['user', 'assistant']);

    // Sign-out erases the preview user's workspace and chats, and ends its tokens.
    const out = await service.fetch('/console/api/session', withSession(session, { method: 'DELETE' }));
    expect(out.status).toBe(204);
    expect(await count(service, 'workspaces')).toBe(0);
    expect(await count(service, 'sandbox_tokens')).toBe(0);
    const chats = await service.database.db
      .selectFrom('chats')
      .select('chat_id')
      .where('user_id', '=', previewUser)
      .execute();
    expect(chats).toEqual([]);
    expect((await service.fetch(`${route}?bootstrap`, withSession(session))).status).toBe(401);
  });

  it('erases the preview of a session that expired unattended when the sweep runs', async () => {
    const session = await signIn(service);
    const previewUser = `console-preview:${session.sessionId}`;
    const turn = await service.fetch(
      `/console/api/agents/${agentId}/preview`,
      withSession(session, { method: 'POST', body: JSON.stringify(chatBody('left-open', 'run it')) }),
    );
    expect(turn.status).toBe(200);
    await readUiChunks(turn);
    const workspacesOf = () =>
      service.database.db.selectFrom('workspaces').select('id').where('user_id', '=', previewUser).execute();
    expect(await workspacesOf()).toHaveLength(1);

    await service.database.db
      .updateTable('console_sessions')
      .set({ expires_at: Date.now() - 1 })
      .where('id', '=', session.sessionId)
      .execute();
    const ended = await sweepExpiredConsoleSessions({
      db: service.database.db,
      storage: service.deps.storage,
      backend: service.deps.sandbox?.backend,
      logger: service.deps.logger,
      userHash: service.deps.userHash,
    });
    expect(ended).toBe(1);
    expect(await workspacesOf()).toEqual([]);
    const chats = await service.database.db
      .selectFrom('chats')
      .select('chat_id')
      .where('user_id', '=', previewUser)
      .execute();
    expect(chats).toEqual([]);
    const sessions = await service.database.db.selectFrom('console_sessions').select('id').execute();
    expect(sessions.map((row) => row.id)).not.toContain(session.sessionId);
  });

  it('is 404 for an unknown agent and refuses other methods', async () => {
    const session = await signIn(service);
    const unknown = await service.fetch(
      '/console/api/agents/agt_000000000000000000000000/preview?bootstrap',
      withSession(session),
    );
    expect(unknown.status).toBe(404);
    const put = await service.fetch(`/console/api/agents/${agentId}/preview`, withSession(session, { method: 'PUT' }));
    expect(put.status).toBe(405);
  });
});
