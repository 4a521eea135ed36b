import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/agents/config-schema.js';
import type { ArtifactCarrier } from '../src/chat/artifact-carrier.js';
import { createChatHandler } from '../src/chat/create-chat-handler.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { type ApiProxy, type ProxyRewrite, startApiProxy } from './support/api-proxy.js';
import { hostedContext } from './support/chat-context.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { startTestService, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import { toolCallingModel } from './support/tool-calling-model.js';
import { finalValue } from './support/tool-execution.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';

/**
 * `createHostedSandboxes` against APIs that answer differently from this one — an older signer,
 * a refusing or broken one, an MCP server that negotiates an older protocol revision — played by
 * a real proxy in front of the real service.
 */

const ENABLED: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };
const OTHER_ARTIFACT = `artifacts/${'0'.repeat(32)}`;

let service: TestService;
let fixture: AgentFixture;
let proxy: ApiProxy;
/** How the proxy answers the current test's requests; the service's answer passes by default. */
let rewrite: ProxyRewrite = () => undefined;

beforeAll(async () => {
  service = await startTestService({
    environment: { MORDN_SANDBOX_ENABLED: 'true', MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
  });
  fixture = await createAgentFixture(service.database.db, { published: ENABLED });
  proxy = await startApiProxy(service.url, (request, upstream) => rewrite(request, upstream));
});
afterAll(async () => {
  await proxy?.close();
  await service?.close();
});
beforeEach(() => {
  rewrite = () => undefined;
  proxy.requests.length = 0;
});

const context = (userId: string) => hostedContext(ENABLED, userId);

/** Rewrites the signer's answers only. */
function signer(answer: (upstream: Response) => Response | Promise<Response>): ProxyRewrite {
  return (request, upstream) => (request.path === '/v1/uploads/resign' ? answer(upstream) : undefined);
}

/** Writes and publishes a report through the proxy; what the helper made of it. */
async function publishReport(userId: string) {
  const warnings: string[] = [];
  const carriers: ArtifactCarrier[] = [];
  const sandboxes = createHostedSandboxes({
    apiKey: fixture.key,
    selfBaseUrl: proxy.origin,
    onWarning: (message) => warnings.push(message),
  });
  const built = await sandboxes.buildTools(context(userId), {
    abortSignal: new AbortController().signal,
    onArtifact: (carrier) => carriers.push(carrier),
  });
  try {
    const options = (toolCallId: string) => ({ toolCallId, messages: [], abortSignal: new AbortController().signal });
    await built.tools.sandbox_write_file?.execute?.({ path: 'out.md', content: '# Report\n' }, options('write'));
    const result = (await built.tools.sandbox_publish_file?.execute?.(
      { path: 'out.md', filename: 'Report.md' },
      options('publish'),
    )) as { isError?: boolean; structuredContent?: { file?: { storagePath?: string } } };
    return { result, carriers, warnings };
  } finally {
    await built.close();
  }
}

describe('the signer', () => {
  it('accepts an answer of { url } alone, taking the canonical fields from the live publish result', async () => {
    let signedUrl = '';
    rewrite = signer(async (upstream) => {
      signedUrl = ((await upstream.json()) as { url: string }).url;
      return Response.json({ url: signedUrl });
    });
    const { result, carriers, warnings } = await publishReport('url-only');
    expect(warnings).toEqual([]);
    expect(carriers).toHaveLength(1);
    expect(carriers[0]).toMatchObject({
      toolCallId: 'publish',
      file: {
        url: signedUrl,
        filename: 'Report.md',
        mediaType: 'text/markdown',
        size: 9,
        storagePath: result.structuredContent?.file?.storagePath,
      },
    });
    expect(await (await fetch(carriers[0]?.file.url as string)).text()).toBe('# Report\n');
  });

  it.each([
    ['a 404', () => Response.json({ code: 'NOT_FOUND' }, { status: 404 }), /404/],
    ['a body that is not JSON', () => new Response('<html>', { headers: { 'content-type': 'text/html' } }), /link/],
    ['a link that is not http(s)', () => Response.json({ url: 'javascript:alert(1)' }), /link/],
    [
      'a record of another file',
      async (upstream: Response) => {
        const answer = (await upstream.json()) as { url: string; file: Record<string, unknown> };
        return Response.json({ ...answer, file: { ...answer.file, storagePath: OTHER_ARTIFACT } });
      },
      /another file/,
    ],
  ])('fails closed on %s: no carrier, a warning, the tool result unchanged', async (_name, answer, why) => {
    rewrite = signer(answer);
    const { result, carriers, warnings } = await publishReport('refused');
    expect(carriers).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(why)]);
    expect(result.isError).not.toBe(true);
    expect(result.structuredContent?.file?.storagePath).toMatch(/^artifacts\//);
  });

  it('a chat streams no file chunk when the signer refuses, and one when it answers { url }', async () => {
    const chatWith = async (chatId: string) => {
      const { model } = toolCallingModel(
        [
          { toolName: 'sandbox_write_file', input: { path: `${chatId}.md`, content: '# Notes\n' } },
          { toolName: 'sandbox_publish_file', input: { path: `${chatId}.md` } },
        ],
        '',
      );
      const agent = { tenantId: fixture.tenantId, agentId: fixture.agentId };
      const handler = createChatHandler({
        getUserId: () => 'chat-user',
        model,
        ...serviceChatStorage(service, agent, 'signer-test'),
        getHostedConfig: async () => ENABLED,
        sandboxes: createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: proxy.origin }),
      });
      const response = await handler.POST(
        new Request('http://app.example/api/chat', { method: 'POST', body: JSON.stringify(chatBody(chatId, 'go')) }),
      );
      return readUiChunks(response);
    };
    rewrite = signer(() => Response.json({ code: 'NOT_FOUND' }, { status: 404 }));
    const refused = await chatWith('signer-refused');
    expect(refused.some((chunk) => chunk.type === 'tool-output-available')).toBe(true);
    expect(refused.filter((chunk) => chunk.type === 'file')).toEqual([]);

    rewrite = signer(async (upstream) => Response.json({ url: ((await upstream.json()) as { url: string }).url }));
    const accepted = await chatWith('signer-url-only');
    expect(accepted.filter((chunk) => chunk.type === 'file')).toEqual([
      expect.objectContaining({
        mediaType: 'text/markdown',
        providerMetadata: { mordn: { sandboxFile: expect.objectContaining({ filename: 'signer-url-only.md' }) } },
      }),
    ]);
  });
});

describe('MCP protocol negotiation', () => {
  it('works with a server that answers initialize with protocol 2025-06-18', async () => {
    rewrite = async (request, upstream) => {
      if (request.path !== '/v1/sandbox/mcp' || !request.body.includes('"initialize"')) return undefined;
      const answer = (await upstream.json()) as { result: { protocolVersion: string } };
      answer.result.protocolVersion = '2025-06-18';
      return Response.json(answer, { status: upstream.status });
    };
    const sandboxes = createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: proxy.origin });
    const built = await sandboxes.buildTools(context('older-protocol'), {
      abortSignal: new AbortController().signal,
      onArtifact: () => undefined,
    });
    try {
      expect(Object.keys(built.tools)).toHaveLength(6);
      const result = (await finalValue(
        built.tools.sandbox_exec?.execute?.(
          { command: 'echo negotiated' },
          { toolCallId: 'exec', messages: [], abortSignal: new AbortController().signal },
        ),
      )) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(result.isError).not.toBe(true);
      expect(JSON.stringify(result.content)).toContain('negotiated');
    } finally {
      await built.close();
    }
    const initialize = proxy.requests.find((request) => request.body.includes('"initialize"'));
    expect(JSON.parse(initialize?.body ?? '{}').params.protocolVersion).toBe('2025-11-25');
    const later = proxy.requests.filter((request) => request.body.includes('"tools/'));
    expect(later.length).toBeGreaterThanOrEqual(2);
    for (const request of later) expect(request.headers['mcp-protocol-version']).toBe('2025-06-18');
  });
});
