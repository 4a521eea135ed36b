import { createMCPClient } from '@ai-sdk/mcp';
import { isToolUIPart, safeValidateUIMessages, type UIMessage, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatHandler } from '../src/chat/create-chat-handler.js';
import { INTERRUPTED_TOOL_ERROR } from '../src/chat/interrupted-message.js';
import { createHostedSandboxes } from '../src/hosted/create-hosted-sandboxes.js';
import { LIVE_OUTPUT_MAX_BYTES, type LiveOutput } from '../src/hosted/live-output.js';
import { LIVE_OUTPUT_STOPPED } from '../src/mcp/exec-progress.js';
import { hostedContext } from './support/chat-context.js';
import type { AgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { pollUntil } from './support/poll.js';
import { SANDBOX_ENABLED_CONFIG, startScriptedChatService } from './support/scripted-chat-service.js';
import { type ChatCompletionRequest, lastUserText, type ModelTurn } from './support/scripted-model-server.js';
import { sdkChat } from './support/sdk-chat.js';
import { agentHeaders, type TestService } from './support/service.js';
import { serviceChatStorage } from './support/service-chat-storage.js';
import { toolCallingModel } from './support/tool-calling-model.js';
import { executionValues } from './support/tool-execution.js';
import { assembleWithSdk, chatBody, readUiChunks, sseChunks } from './support/ui-stream.js';

/**
 * Live command output in the chat, end to end with real sandboxes and a scripted model: a running
 * `sandbox_exec` reaches the AI SDK's chat machinery as preliminary tool results (bounded, growing),
 * the final result replaces them and is all the history keeps, a resumed answer replays them, and
 * a stop or a client that leaves mid-output kills the command and stores the call as interrupted.
 */

const COUNT = 'for i in $(seq 1 10); do echo line-$i; sleep 0.3; done';
const COUNTED = Array.from({ length: 10 }, (_, index) => `line-${index + 1}\n`).join('');
/** Three rounds of 4,000 numbers (about 19 KB each), far past what one preliminary result shows. */
const FLOOD = 'for i in 1 2 3; do seq 1 4000; sleep 0.3; done';
const FLOODED = Array.from({ length: 3 }, () =>
  Array.from({ length: 4000 }, (_, index) => `${index + 1}\n`).join(''),
).join('');
/** Writes to both streams at once, then a marker it only reaches if nobody stopped it. */
const stoppable = (marker: string) => `echo started; echo warming >&2; sleep 1.5; touch ${marker}; echo late`;

/** The model runs the command the user's message names (`run: …`), then says it is done. */
function script(request: ChatCompletionRequest): ModelTurn {
  if (request.messages.some((message) => message.role === 'tool')) return { text: 'Done.' };
  const command = lastUserText(request).replace(/^run: /, '');
  return { toolCalls: [{ name: 'sandbox_exec', arguments: { command, timeoutSeconds: 30 } }] };
}

let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ service, fixture, close } = await startScriptedChatService(script, {
    environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000', MORDN_CHAT_COALESCE_MS: '0' },
  }));
});
afterAll(() => close());

type ToolOutputChunk = Extract<UIMessageChunk, { type: 'tool-output-available' }>;

/** The tool results of a UI stream, preliminary and final. */
const outputsOf = (chunks: ReadonlyArray<unknown>) =>
  (chunks as UIMessageChunk[]).filter((chunk): chunk is ToolOutputChunk => chunk.type === 'tool-output-available');
const preliminaryOf = (chunks: ReadonlyArray<unknown>) =>
  outputsOf(chunks)
    .filter((chunk) => chunk.preliminary === true)
    .map((chunk) => chunk.output as LiveOutput);
const shownText = (live: LiveOutput) => live.output.map((piece) => piece.text).join('');

function postChat(chatId: string, text: string, options: { user: string; resumable?: boolean }) {
  return service.fetch('/v1/chat', {
    method: 'POST',
    headers: {
      ...agentHeaders(fixture.key, options.user),
      'Content-Type': 'application/json',
      ...(options.resumable ? { 'X-Chat-Resumable': '1' } : {}),
    },
    body: JSON.stringify(chatBody(chatId, text)),
  });
}

/** The chat's stored messages, once its last one is an answer `accept` takes. */
async function storedAnswer(read: () => Promise<Response>, accept: (answer: Json) => boolean): Promise<UIMessage> {
  const body = await pollUntil(
    async () => {
      const response = await read();
      return response.status === 200 ? readJson(response) : undefined;
    },
    (history) => history?.messages.at(-1)?.role === 'assistant' && accept(history.messages.at(-1)),
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  const validated = await safeValidateUIMessages({ messages: body.messages });
  expect(validated.success ? undefined : validated.error).toBeUndefined();
  return body.messages.at(-1) as UIMessage;
}

const serviceHistory = (chatId: string, user: string) => () =>
  service.fetch(`/v1/chats/${chatId}`, { headers: agentHeaders(fixture.key, user) });

/** Whether `path` exists in `user`'s workspace, asked over MCP in a call of its own. */
async function workspaceHas(user: string, path: string): Promise<boolean> {
  const client = await connectSdkClient(service, fixture.key, user);
  try {
    const { value } = await callTool(client, 'sandbox_exec', { command: `test -e ${path} && echo yes || echo no` });
    return value.stdout === 'yes\n';
  } finally {
    await client.close();
  }
}

/** Reads an SSE body until a preliminary tool result has come; the rest stays unread. */
async function untilLiveOutput(response: Response) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (preliminaryOf(sseChunks(text)).length === 0) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return { chunks: sseChunks(text), reader };
}

/** The interrupted call an answer was stored with, checked to carry no output, live or final. */
function interruptedCall(answer: UIMessage) {
  const call = answer.parts.find(isToolUIPart);
  expect(call).toMatchObject({ toolName: 'sandbox_exec', state: 'output-error', errorText: INTERRUPTED_TOOL_ERROR });
  expect(call && 'output' in call).toBe(false);
  expect(JSON.stringify(answer)).not.toContain('preliminary');
}

describe("POST /v1/chat: a running command's output", () => {
  it("reaches the AI SDK's chat as growing preliminary results, replays on resume, and only the final is stored", async () => {
    const chatId = 'live-count';
    /** Each distinct preliminary output the chat showed, with when it came, then when the final came. */
    const shown: Array<{ at: number; output: LiveOutput }> = [];
    let finalAt: number | undefined;
    const chat = sdkChat({
      id: chatId,
      api: `${service.url}/v1/chat`,
      headers: { ...agentHeaders(fixture.key, 'alice'), 'X-Chat-Resumable': '1' },
      onMessages: (messages) => {
        const call = messages.at(-1)?.parts.find(isToolUIPart);
        if (call?.state !== 'output-available') return;
        if (!call.preliminary) finalAt ??= Date.now();
        else if (JSON.stringify(call.output) !== JSON.stringify(shown.at(-1)?.output))
          shown.push({ at: Date.now(), output: structuredClone(call.output) as LiveOutput });
      },
    });
    const sending = chat.sendMessage({ text: `run: ${COUNT}` });
    // Another reader joins once the first line is out: it gets the answer from its first chunk.
    await pollUntil(
      () => shown.length,
      (count) => count > 0,
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    const resumed = await service.fetch(`/v1/chat/${chatId}/stream`, { headers: agentHeaders(fixture.key, 'alice') });
    expect(resumed.status).toBe(200);
    const replayed = sseChunks(await resumed.text());
    await sending;

    expect(shown.length).toBeGreaterThanOrEqual(5);
    expect(finalAt).toBeDefined();
    // The first lines showed well before the command ended.
    expect((finalAt as number) - (shown[0]?.at as number)).toBeGreaterThan(1_000);
    for (const [index, { output }] of shown.entries()) {
      expect(output.omittedBytes).toBe(0);
      expect(output.output.every((piece) => piece.stream === 'stdout')).toBe(true);
      expect(COUNTED.startsWith(shownText(output))).toBe(true);
      if (index > 0)
        expect(shownText(output).length).toBeGreaterThan(shownText(shown[index - 1]?.output as LiveOutput).length);
    }
    const finalCall = chat.lastMessage?.parts.find(isToolUIPart);
    expect(finalCall).toMatchObject({ state: 'output-available', output: { structuredContent: { stdout: COUNTED } } });
    expect(finalCall && 'preliminary' in finalCall ? finalCall.preliminary : undefined).toBeFalsy();

    // The raw stream, replayed: the preliminary results flagged as such, then the final one.
    const replayedOutputs = outputsOf(replayed);
    expect(replayedOutputs.filter((chunk) => chunk.preliminary === true).length).toBeGreaterThanOrEqual(5);
    expect(replayedOutputs.at(-1)?.preliminary).toBeUndefined();
    expect(replayedOutputs.findIndex((chunk) => chunk.preliminary !== true)).toBe(replayedOutputs.length - 1);

    const stored = await storedAnswer(serviceHistory(chatId, 'alice'), () => true);
    expect(stored.parts.find(isToolUIPart)).toEqual(finalCall);
    expect(JSON.stringify(stored)).not.toMatch(/preliminary|omittedBytes/);
    const fromReplay = await assembleWithSdk(replayed as UIMessageChunk[]);
    expect(fromReplay?.parts.find(isToolUIPart)).toEqual(finalCall);
  });

  it('keeps each preliminary result within 8 KiB under a flood: the latest lines, and the bytes left out', async () => {
    const response = await postChat('live-flood', `run: ${FLOOD}`, { user: 'bob' });
    const chunks = await readUiChunks(response);
    const live = preliminaryOf(chunks);
    expect(live.length).toBeGreaterThanOrEqual(2);
    let received = 0;
    for (const output of live) {
      expect(Buffer.byteLength(JSON.stringify(output))).toBeLessThanOrEqual(LIVE_OUTPUT_MAX_BYTES);
      // A window of the output as written: what it leaves out, then what it shows, from a line start
      // (up to the service's note where its share of live output ran out, if it did).
      const text = shownText(output).replace(LIVE_OUTPUT_STOPPED, '');
      expect(FLOODED.slice(output.omittedBytes, output.omittedBytes + text.length)).toBe(text);
      expect(output.omittedBytes === 0 || FLOODED[output.omittedBytes - 1] === '\n').toBe(true);
      expect(output.omittedBytes + Buffer.byteLength(shownText(output))).toBeGreaterThan(received);
      received = output.omittedBytes + Buffer.byteLength(shownText(output));
    }
    expect(live.at(-1)?.omittedBytes).toBeGreaterThan(LIVE_OUTPUT_MAX_BYTES);
    const final = outputsOf(chunks).at(-1);
    expect(final?.preliminary).toBeUndefined();
    expect(final).toMatchObject({ output: { structuredContent: { stdout: FLOODED } } });
  });

  it('stops through the stop route mid-output: the command dies and the call is stored as interrupted', async () => {
    const response = await postChat('live-stop', `run: ${stoppable('stopped-marker')}`, {
      user: 'carol',
      resumable: true,
    });
    const startedAt = Date.now();
    const { chunks, reader } = await untilLiveOutput(response);
    const pieces = preliminaryOf(chunks).flatMap((output) => output.output);
    expect(pieces.some((piece) => piece.stream === 'stdout' && piece.text.includes('started'))).toBe(true);
    const stop = await service.fetch('/v1/chat/live-stop/stop', {
      method: 'POST',
      headers: agentHeaders(fixture.key, 'carol'),
    });
    expect(stop.status).toBe(204);
    await reader.cancel();

    const stored = await storedAnswer(serviceHistory('live-stop', 'carol'), (answer) => answer.metadata?.mordn);
    expect(stored.metadata).toEqual({ mordn: { interrupted: { reason: 'stop' } } });
    interruptedCall(stored);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 2_500 - Date.now())));
    expect(await workspaceHas('carol', 'stopped-marker')).toBe(false);
  });
});

describe('createChatHandler with createHostedSandboxes in a host', () => {
  const hostFor = (command: string, mcpCredential: 'agentKey' | 'userToken' = 'agentKey', streamTimeoutMs?: number) =>
    createChatHandler({
      ...(streamTimeoutMs === undefined ? {} : { streamTimeoutMs }),
      getUserId: () => `host-${mcpCredential}`,
      model: toolCallingModel([{ toolName: 'sandbox_exec', input: { command } }]).model,
      ...serviceChatStorage(service, fixture, 'host'),
      getHostedConfig: async () => SANDBOX_ENABLED_CONFIG,
      sandboxes: createHostedSandboxes({
        apiKey: fixture.key,
        selfBaseUrl: service.deps.selfBaseUrl as string,
        mcpCredential,
      }),
    });
  const request = (chatId: string, signal?: AbortSignal) =>
    new Request('http://host.example/api/chat', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(chatBody(chatId, 'run it')),
      ...(signal ? { signal } : {}),
    });

  it.each(['agentKey', 'userToken'] as const)(
    'streams live output as preliminary results with the %s credential, and stores only the final',
    async (mcpCredential) => {
      const handler = hostFor('for i in 1 2 3 4; do echo step-$i; sleep 0.3; done', mcpCredential);
      const chatId = `host-live-${mcpCredential}`;
      const chunks = await readUiChunks(await handler.POST(request(chatId)));
      const live = preliminaryOf(chunks);
      expect(live.length).toBeGreaterThanOrEqual(3);
      expect(shownText(live.at(-1) as LiveOutput)).toMatch(/^step-1\nstep-2\nstep-3\n/);
      expect(outputsOf(chunks).at(-1)).toMatchObject({ output: { structuredContent: { exitCode: 0 } } });
      const history = await readJson(await handler.GET(new Request(`http://host.example/api/chat?chatId=${chatId}`)));
      const call = (history.messages.at(-1) as UIMessage).parts.find(isToolUIPart);
      expect(call).toMatchObject({ state: 'output-available', output: outputsOf(chunks).at(-1)?.output });
      expect(JSON.stringify(history)).not.toContain('preliminary');
    },
  );

  it('gives the model what @ai-sdk/mcp gives it: the same result value and the same model output', async () => {
    const context = hostedContext(SANDBOX_ENABLED_CONFIG, 'parity');
    const built = await createHostedSandboxes({
      apiKey: fixture.key,
      selfBaseUrl: service.deps.selfBaseUrl as string,
    }).buildTools(context, { abortSignal: new AbortController().signal, onArtifact: () => undefined });
    const plain = await createMCPClient({
      transport: { type: 'http', url: `${service.url}/v1/sandbox/mcp`, headers: agentHeaders(fixture.key, 'parity') },
    });
    try {
      const plainTools = await plain.tools();
      const options = { toolCallId: 'parity', messages: [], abortSignal: new AbortController().signal };
      const live = built.tools.sandbox_exec;
      for (const input of [{ command: 'printf "a\\tb"; echo err >&2; exit 3' }, { command: '' }]) {
        const values = await executionValues(live?.execute?.(input, options));
        const expected = (await plainTools.sandbox_exec?.execute?.(input, options)) as Json;
        const actual = values.at(-1) as Json;
        const withoutTimes = (value: Json) =>
          JSON.parse(JSON.stringify(value).replace(/(\\?"durationMs\\?":)\d+/g, '$10'));
        expect(Object.keys(actual)).toEqual(Object.keys(expected));
        expect(withoutTimes(actual)).toEqual(withoutTimes(expected));
        const modelOutput = (value: Json) =>
          withoutTimes(live?.toModelOutput?.({ toolCallId: 'parity', input, output: value }) as Json);
        expect(modelOutput(actual)).toEqual(modelOutput(expected));
      }
      expect(live?.toModelOutput).toBe(plainTools.sandbox_exec?.toModelOutput);
    } finally {
      await plain.close();
      await built.close();
    }
  });

  it.each([
    ['the client leaves', 'stop'],
    ['the deadline passes', 'timeout'],
  ] as const)('kills the command when %s mid-output and stores the call as interrupted', async (_, reason) => {
    const marker = `${reason}-marker`;
    const handler = hostFor(stoppable(marker), 'agentKey', reason === 'timeout' ? 1_500 : undefined);
    const chatId = `host-${reason}`;
    const leave = new AbortController();
    const startedAt = Date.now();
    const response = await handler.POST(request(chatId, leave.signal));
    const { chunks, reader } = await untilLiveOutput(response);
    expect(preliminaryOf(chunks)).not.toEqual([]);
    if (reason === 'stop') {
      leave.abort();
      await reader.cancel().catch(() => undefined);
    } else {
      // Read on to the end: the answer closes itself at its deadline.
      while (!(await reader.read()).done);
    }

    const stored = await storedAnswer(
      () => handler.GET(new Request(`http://host.example/api/chat?chatId=${chatId}`)),
      (answer) => answer.metadata?.mordn,
    );
    expect(stored.metadata).toEqual({ mordn: { interrupted: { reason } } });
    interruptedCall(stored);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 2_500 - Date.now())));
    expect(await workspaceHas('host-agentKey', marker)).toBe(false);
  });
});
