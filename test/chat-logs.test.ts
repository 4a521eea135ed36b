import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AgentFixture } from './support/fixtures.js';
import { pollUntil } from './support/poll.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { ChatCompletionRequest, ModelTurn, ScriptedModelServer } from './support/scripted-model-server.js';
import { agentHeaders, type TestService } from './support/service.js';
import { chatBody, readUiChunks } from './support/ui-stream.js';

/**
 * Conversation content never reaches a log line above debug: not the prompt, the answer, a tool's
 * arguments or output, nor the request body an AI SDK provider error carries. A distinctive canary
 * rides in every one of them while the chat succeeds, fails at the provider and loses its client;
 * the service logs at debug, and everything printed to the console is captured as well.
 */

const CANARY = 'canary-9d27c41e';
const DEBUG = 20;
const INFO = 30;
const ERROR = 50;

function scenario(request: ChatCompletionRequest): ModelTurn {
  const sent = JSON.stringify(request.messages);
  const toolResults = request.messages.filter((message) => message.role === 'tool').length;
  if (sent.includes('SCENARIO provider-error')) {
    return {
      status: 400,
      body: { error: { message: 'The model refused the request.', type: 'invalid_request_error' } },
    };
  }
  if (sent.includes('SCENARIO hang')) return { hang: true };
  if (toolResults === 0) {
    return { toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo ${CANARY}-from-the-tool` } }] };
  }
  return { text: [`Your ${CANARY} `, 'is ready.'] };
}

let model: ScriptedModelServer;
let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;
const consoleOutput: string[] = [];

beforeAll(async () => {
  // The AI SDK prints failures to the console by default; whatever reaches it counts as logged.
  for (const method of ['error', 'warn', 'info', 'log', 'debug'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      consoleOutput.push(args.map((arg) => (typeof arg === 'string' ? arg : inspect(arg, { depth: 8 }))).join(' '));
    });
  }
  ({ model, service, fixture, close } = await startScriptedChatService(scenario));
});
afterAll(async () => {
  await close();
  vi.restoreAllMocks();
});

function postChat(chatId: string, text: string, signal?: AbortSignal) {
  return service.fetch('/v1/chat', {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, 'alice'), 'Content-Type': 'application/json' },
    body: JSON.stringify(chatBody(chatId, text)),
    ...(signal ? { signal } : {}),
  });
}

const parsedLogs = () => service.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
const linesOf = (requestId: string | null) => parsedLogs().filter((line) => line.requestId === requestId);

/** Nothing above debug, and nothing on the console, mentions the canary. */
function expectNoContentInLogs() {
  const aboveDebug = service.logs.filter((line) => (JSON.parse(line).level as number) > DEBUG);
  expect(aboveDebug.filter((line) => line.includes(CANARY))).toEqual([]);
  expect(consoleOutput.filter((line) => line.includes(CANARY))).toEqual([]);
}

describe('chat logs', () => {
  it('keep the prompt, the answer and the tool call out of every line of a successful chat', async () => {
    const response = await postChat('logs-success', `SCENARIO tool: print ${CANARY}`);
    const chunks = await readUiChunks(response);
    // The canary did travel: through the tool and back into the answer.
    expect(JSON.stringify(chunks)).toContain(`${CANARY}-from-the-tool`);
    expect(JSON.stringify(chunks)).toContain(`Your ${CANARY}`);
    expect(model.requests.some((request) => JSON.stringify(request).includes(`${CANARY}-from-the-tool`))).toBe(true);
    await pollUntil(
      () => service.logs.some((line) => line.includes('/v1/sandbox/mcp')),
      (seen) => seen,
      { timeoutMs: 3_000 },
    );
    expectNoContentInLogs();
  });

  it("log a provider's failure as one error line with its diagnosis and without the request body", async () => {
    const response = await postChat('logs-provider', `SCENARIO provider-error: ${CANARY}`);
    const requestId = response.headers.get('x-request-id');
    const chunks = await readUiChunks(response);
    expect(chunks.some((chunk) => chunk.type === 'error')).toBe(true);
    const failures = await pollUntil(
      () => linesOf(requestId).filter((line) => (line.level as number) >= ERROR),
      (lines) => lines.length > 0,
      { timeoutMs: 3_000 },
    );
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      msg: 'chat failed',
      err: { type: 'APICallError', statusCode: 400, message: 'The model refused the request.' },
    });
    expect(JSON.stringify(failures[0])).not.toContain('requestBodyValues');
    expectNoContentInLogs();
  });

  it('log a client that leaves mid-answer as one info line, and no error', async () => {
    const controller = new AbortController();
    const next = model.requests.length;
    const response = await postChat('logs-disconnect', `SCENARIO hang: ${CANARY}`, controller.signal);
    const requestId = response.headers.get('x-request-id');
    const reading = response.text().catch(() => undefined);
    await model.waitForRequest(next);
    controller.abort();
    await reading;
    const interrupted = await pollUntil(
      () => linesOf(requestId).filter((line) => line.msg === 'chat interrupted'),
      (lines) => lines.length > 0,
      { timeoutMs: 3_000 },
    );
    // Anything late would show up here too.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(interrupted).toEqual([expect.objectContaining({ level: INFO, reason: 'stop' })]);
    expect(linesOf(requestId).filter((line) => line.msg === 'chat interrupted')).toHaveLength(1);
    expect(linesOf(requestId).filter((line) => (line.level as number) > INFO)).toEqual([]);
    expect(consoleOutput.filter((line) => /abort|prematurely/i.test(line))).toEqual([]);
    expectNoContentInLogs();
  });
});
