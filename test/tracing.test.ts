import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { createMordnHandler } from '../src/hosted/create-mordn-handler.js';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { rawMcp, toolCall } from './support/mcp.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver.js';
import { pollUntil } from './support/poll.js';
import { type ServiceReplica, startReplica } from './support/replica.js';
import { SANDBOX_ENABLED_CONFIG } from './support/scripted-chat-service.js';
import {
  type ChatCompletionRequest,
  type ModelTurn,
  type ScriptedModelServer,
  startScriptedModelServer,
} from './support/scripted-model-server.js';
import { agentHeaders } from './support/service.js';
import { chatBody } from './support/ui-stream.js';

/**
 * Traces of `mordn serve` (a child process, the SDK started as it starts it) as an OTLP/HTTP
 * receiver gets them from the real exporter, in both protocols: one trace per chat turn, from the
 * HTTP request through the model and tool calls to the sandbox command, with no content and no
 * raw user id; the API's spans join a host's trace across `createMordnHandler`; and with no
 * endpoint configured nothing is exported and no SDK module is loaded.
 */

const PROMPT_CANARY = 'prompt-canary-5e1d';
const COMMAND_CANARY = 'command-canary-77b0';
const RAW_USER = 'raw-user-id-3c9f0a';
const CHAT_CANARY = 'chat-canary-a41e';
const PROBE = path.join(import.meta.dirname, 'support', 'module-load-probe.mjs');

function script(request: ChatCompletionRequest): ModelTurn {
  const toolResults = request.messages.filter((message) => message.role === 'tool').length;
  const sent = JSON.stringify(request.messages);
  if (sent.includes('PLAIN') || toolResults > 0) return { text: ['All ', 'done.'] };
  return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo ${COMMAND_CANARY}` } }] };
}

let model: ScriptedModelServer;
let target: TestDatabaseTarget;
let database: Database;
let fixture: AgentFixture;
let loadLogs: string;

beforeAll(async () => {
  [model, target, loadLogs] = await Promise.all([
    startScriptedModelServer(script),
    createTestDatabaseTarget(),
    mkdtemp(path.join(tmpdir(), 'mordn-otel-loads-')),
  ]);
  database = await target.open();
  fixture = await createAgentFixture(database.db, { published: SANDBOX_ENABLED_CONFIG });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await model?.close();
  await target?.destroy();
});

/** A `mordn serve` child with the module-load probe, sandboxes on and the scripted model. */
function startService(name: string, environment: Record<string, string>): Promise<ServiceReplica> {
  return startReplica({
    ...target.environment,
    ...(process.getuid?.() === 0 ? {} : { MORDN_SANDBOX_WEAK_LIMITS: 'true' }),
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_MODEL: 'openai-compatible:scripted-1',
    MORDN_MODEL_BASE_URL: model.baseUrl,
    NODE_OPTIONS: `--import=${PROBE}`,
    MORDN_TEST_LOAD_LOG: path.join(loadLogs, name),
    ...environment,
  });
}

const loadedModules = (name: string) =>
  existsSync(path.join(loadLogs, name)) ? readFileSync(path.join(loadLogs, name), 'utf8').trim().split('\n') : [];

async function chat(service: ServiceReplica, chatId: string, text: string): Promise<string> {
  const response = await service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, RAW_USER), 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, text)),
  });
  expect(response.status).toBe(200);
  return response.text();
}

const one = (spans: ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean, what: string): ReceivedSpan => {
  const found = spans.filter(predicate);
  expect(found, what).toHaveLength(1);
  return found[0] as ReceivedSpan;
};
const named = (spans: ReceivedSpan[], name: string) => one(spans, (span) => span.name === name, name);
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId);

describe.each(['http/json', 'http/protobuf'] as const)('traces over %s', (protocol) => {
  let receiver: OtlpReceiver;
  let service: ServiceReplica;
  const logName = protocol.replace('/', '-');

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    service = await startService(logName, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=token-0123',
      OTEL_SERVICE_NAME: 'mordn-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('form one tree per chat turn, from the HTTP request to the sandbox command', async () => {
    const chatId = `chat-${CHAT_CANARY}-${logName}`;
    const answer = await chat(service, chatId, `Run it: ${PROMPT_CANARY}`);
    expect(answer).toContain('done.');
    const history = await service.fetch(`/v1/chats/${chatId}?signature=${CHAT_CANARY}`, {
      headers: agentHeaders(fixture.key, RAW_USER),
    });
    expect(history.status).toBe(200);
    const spans = await pollUntil(
      () => receiver.spans(),
      (all) =>
        ['invoke_agent', 'sandbox sandbox_exec', 'GET /v1/chats/:chatId'].every((name) =>
          all.some((span) => span.name === name),
        ),
      { timeoutMs: 15_000 },
    );

    // Named by the route template: no chat id or query reaches a span.
    expect(spans.map((span) => span.name)).toContain('GET /v1/chats/:chatId');
    const http = one(spans, (span) => span.name === 'POST /v1/chat', 'the chat request span');
    expect(http.parentSpanId).toBe('');
    expect(http.kind).toBe(SpanKind.SERVER + 1);
    expect(http.attributes).toMatchObject({ 'http.route': '/v1/chat', 'http.response.status_code': 200 });
    const turn = named(childrenOf(spans, http), 'invoke_agent');
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'mordn.tenant.id': fixture.tenantId,
      'mordn.agent.id': fixture.agentId,
      'enduser.pseudo.id': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const modelCalls = childrenOf(spans, turn).filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(modelCalls).toHaveLength(2);
    for (const call of modelCalls) {
      expect(call.name).toBe('chat scripted-1');
      expect(call.attributes).toMatchObject({
        'gen_ai.request.model': 'scripted-1',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
      });
      expect(call.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    }
    const asking = modelCalls.find(
      (call) => call.attributes['gen_ai.response.finish_reasons']?.toString() === 'tool-calls',
    );
    expect(asking).toBeDefined();
    const tool = named(childrenOf(spans, asking as ReceivedSpan), 'execute_tool sandbox_exec');
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'sandbox_exec',
      'mordn.tool.outcome': 'ok',
    });
    // The service reaches its own sandbox endpoint over loopback: the request carries `traceparent`.
    const mcpHttp = named(childrenOf(spans, tool), 'POST /v1/sandbox/mcp');
    expect(mcpHttp.kind).toBe(SpanKind.SERVER + 1);
    const mcp = named(childrenOf(spans, mcpHttp), 'tools/call sandbox_exec');
    expect(mcp.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'mordn.tenant.id': fixture.tenantId });
    const command = named(childrenOf(spans, mcp), 'sandbox sandbox_exec');
    expect(command.attributes).toMatchObject({
      'process.exit.code': 0,
      'mordn.sandbox.killed': false,
      'mordn.sandbox.duration_ms': expect.any(Number),
    });
    expect(new Set(spans.filter((span) => span.traceId === http.traceId).map((span) => span.name))).toContain(
      'sandbox sandbox_exec',
    );

    // The exporter's own settings: service name and headers from the standard variables.
    expect(http.resource['service.name']).toBe('mordn-under-test');
    expect(receiver.exports[0]?.headers['x-collector-token']).toBe('token-0123');
    expect(receiver.exports[0]?.contentType).toContain(protocol === 'http/json' ? 'json' : 'protobuf');
    // No content and no raw user id anywhere in what was exported, decoded or not.
    const everything = Buffer.concat(receiver.exports.map((entry) => entry.body)).toString('latin1');
    for (const secret of [PROMPT_CANARY, COMMAND_CANARY, RAW_USER, CHAT_CANARY, 'echo '])
      expect(everything).not.toContain(secret);
    expect(loadedModules(logName).some((url) => url.includes('exporter-trace-otlp'))).toBe(true);
  });

  if (protocol === 'http/protobuf') {
    it("puts an MCP request under the context in its params._meta.traceparent, over the header's", async () => {
      const headerTrace = '0af7651916cd43dd8448eb211c80319c';
      const metaTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const metaParent = '00f067aa0ba902b7';
      const call = toolCall('sandbox_exec', { command: 'true' });
      const response = await rawMcp(
        service,
        fixture.key,
        { ...call, params: { ...call.params, _meta: { traceparent: `00-${metaTrace}-${metaParent}-01` } } },
        { userId: RAW_USER, headers: { traceparent: `00-${headerTrace}-b7ad6b7169203331-01` } },
      );
      expect(response.status).toBe(200);
      await response.text();
      const spans = await pollUntil(
        () => receiver.spans(),
        (all) => all.some((span) => span.traceId === metaTrace && span.name === 'sandbox sandbox_exec'),
        { timeoutMs: 15_000 },
      );
      // The HTTP request continues the header's trace; the MCP request (and its command) the _meta's.
      const http = one(spans, (span) => span.traceId === headerTrace, 'the HTTP span of the header trace');
      expect(http).toMatchObject({ name: 'POST /v1/sandbox/mcp', parentSpanId: 'b7ad6b7169203331' });
      const mcp = one(spans, (span) => span.traceId === metaTrace && span.name === 'tools/call sandbox_exec', 'mcp');
      expect(mcp.parentSpanId).toBe(metaParent);
      expect(named(childrenOf(spans, mcp), 'sandbox sandbox_exec').attributes['process.exit.code']).toBe(0);
    });

    it("joins a host's own trace across the createMordnHandler → API hop", async () => {
      const host = new InMemorySpanExporter();
      const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(host)] });
      provider.register();
      try {
        const handler = createMordnHandler({
          apiKey: fixture.key,
          getUserId: () => RAW_USER,
          selfBaseUrl: service.url,
        });
        const hostSpan = await trace.getTracer('host').startActiveSpan('host page', async (span) => {
          const response = await handler.POST(
            new Request('http://app.example/api/chat', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(chatBody('trace-hosted', 'PLAIN hello')),
            }),
          );
          expect(response.status).toBe(200);
          await response.text();
          span.end();
          return span.spanContext();
        });
        const spans = await pollUntil(
          () => receiver.spans().filter((span) => span.traceId === hostSpan.traceId),
          (all) => all.some((span) => span.name === 'invoke_agent'),
          { timeoutMs: 15_000 },
        );
        const api = one(spans, (span) => span.name === 'POST /v1/chat', "the API's chat span");
        expect(api.parentSpanId).toBe(hostSpan.spanId);
        const turn = named(childrenOf(spans, api), 'invoke_agent');
        expect(childrenOf(spans, turn).map((span) => span.name)).toEqual(['chat scripted-1']);
        expect(host.getFinishedSpans().map((span) => span.name)).toContain('host page');
      } finally {
        await provider.shutdown();
        trace.disable();
        context.disable();
        propagation.disable();
      }
    });
  }
});

describe('without an OTLP endpoint', () => {
  it('exports nothing and loads no SDK module', async () => {
    const receiver = await startOtlpReceiver();
    const service = await startService('off', { OTEL_SERVICE_NAME: 'mordn-off' });
    try {
      expect(await chat(service, 'trace-off', `PLAIN ${PROMPT_CANARY}`)).toContain('done.');
      expect((await service.fetch('/healthz')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.exports).toEqual([]);
      expect(loadedModules('off')).toEqual([]);
    } finally {
      await service.stop();
      await receiver.close();
    }
  }, 60_000);
});
