import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One message of a Chat Completions request, as the AI SDK's providers send it. */
export interface ChatCompletionMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | Array<Record<string, unknown>> | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

/** A function tool as offered to the model in a request. */
export interface ChatCompletionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

/** A request body as received; fields the server does not interpret are kept as they came. */
export interface ChatCompletionRequest {
  model: string;
  messages: ChatCompletionMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: ChatCompletionTool[];
  tool_choice?: unknown;
  [key: string]: unknown;
}

export interface ScriptedToolCall {
  name: string;
  /** An object is sent as JSON; a string is sent verbatim (malformed JSON, to test repair). */
  arguments: Record<string, unknown> | string;
  /** Defaults to `call_<request index>_<call index>`. */
  id?: string;
}

/** Token counts to report; by default about one token per four characters sent and answered. */
export interface ScriptedUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of `promptTokens`, read from the provider's cache (default 0). */
  cachedTokens?: number;
  /** Of `completionTokens`, spent reasoning (default 0). */
  reasoningTokens?: number;
}

interface TurnTiming {
  /** Wait this long before answering; nothing is sent meanwhile. */
  delayMs?: number;
  /** Streamed answers: wait this long before each text delta after the first (a slow stream). */
  deltaDelayMs?: number;
}

/** Answers with text, streamed as the given deltas when `text` is an array. */
export interface TextTurn extends TurnTiming {
  text: string | string[];
  /** null: the reply reports no usage at all (as some providers do). */
  usage?: ScriptedUsage | null;
}

/** Calls tools (after optional text); each call's arguments stream in several pieces. */
export interface ToolCallTurn extends TurnTiming {
  toolCalls: ScriptedToolCall[];
  text?: string | string[];
  /** null: the reply reports no usage at all (as some providers do). */
  usage?: ScriptedUsage | null;
}

/** Sends the response headers, then nothing until the client disconnects (timeouts, aborts). */
export interface HangTurn extends TurnTiming {
  hang: true;
}

/** Fails with this HTTP status; an object body is sent as JSON, a string as plain text. */
export interface ErrorTurn extends TurnTiming {
  status: number;
  body: unknown;
}

/** One scripted answer to one request; any of them may first wait `delayMs`. */
export type ModelTurn = TextTurn | ToolCallTurn | HangTurn | ErrorTurn;

/** A turn that produces a completion, with what is needed to render it. */
interface ModelReply {
  turn: TextTurn | ToolCallTurn;
  request: ChatCompletionRequest;
  turnIndex: number;
}

/** OpenAI streams arguments a few characters at a time; clients must reassemble them by index. */
const ARGUMENT_PIECE_LENGTH = 8;

function splitEvery(text: string, length: number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += length) pieces.push(text.slice(start, start + length));
  return pieces;
}

const estimateTokens = (text: string) => Math.ceil(text.length / 4);

function replyParts({ turn, request, turnIndex }: ModelReply) {
  const textDeltas = (typeof turn.text === 'string' ? [turn.text] : (turn.text ?? [])).filter((delta) => delta !== '');
  const toolCalls = ('toolCalls' in turn ? turn.toolCalls : []).map((call, callIndex) => ({
    id: call.id ?? `call_${turnIndex}_${callIndex}`,
    type: 'function' as const,
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const text = textDeltas.join('');
  const counted = turn.usage ?? {
    promptTokens: estimateTokens(JSON.stringify([request.messages, request.tools ?? []])),
    completionTokens: estimateTokens(text + toolCalls.map((call) => call.function.arguments).join('')),
  };
  const usage =
    turn.usage === null
      ? undefined
      : {
          prompt_tokens: counted.promptTokens,
          completion_tokens: counted.completionTokens,
          total_tokens: counted.promptTokens + counted.completionTokens,
          prompt_tokens_details: { cached_tokens: counted.cachedTokens ?? 0 },
          completion_tokens_details: { reasoning_tokens: counted.reasoningTokens ?? 0 },
        };
  const created = Math.floor(Date.now() / 1000);
  return {
    /** The fields every completion and chunk starts with, in OpenAI's order. */
    header: (object: string) => ({
      id: `chatcmpl-scripted-${turnIndex}`,
      object,
      created,
      model: request.model,
      system_fingerprint: null,
    }),
    textDeltas,
    text,
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    usage,
  };
}

/**
 * The `chat.completion.chunk` objects OpenAI streams for this reply: a role delta, content deltas,
 * per call a start delta (`index`, `id`, `type`, `function.name`) and argument pieces, a final
 * chunk with `finish_reason`, and a usage chunk with empty `choices` when the request asked for it.
 */
function replyChunks(reply: ModelReply): unknown[] {
  const { header, textDeltas, toolCalls, finishReason, usage } = replyParts(reply);
  const includeUsage = reply.request.stream_options?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...header('chat.completion.chunk'),
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });
  const chunks: unknown[] = [];
  if (textDeltas.length > 0 || toolCalls.length === 0) {
    chunks.push(chunk({ role: 'assistant', content: '', refusal: null }));
  }
  for (const delta of textDeltas) chunks.push(chunk({ content: delta }));
  for (const [index, call] of toolCalls.entries()) {
    const start = { index, id: call.id, type: call.type, function: { name: call.function.name, arguments: '' } };
    chunks.push(
      chunk(
        chunks.length === 0
          ? { role: 'assistant', content: null, tool_calls: [start], refusal: null }
          : { tool_calls: [start] },
      ),
    );
    for (const piece of splitEvery(call.function.arguments, ARGUMENT_PIECE_LENGTH)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  chunks.push(chunk({}, finishReason));
  if (includeUsage && usage) chunks.push({ ...header('chat.completion.chunk'), choices: [], usage });
  return chunks;
}

/** The single `chat.completion` object OpenAI answers with when `stream` is false. */
function replyCompletion(reply: ModelReply): unknown {
  const { header, text, toolCalls, finishReason, usage } = replyParts(reply);
  const message = {
    role: 'assistant',
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  return {
    ...header('chat.completion'),
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  };
}

/**
 * What the server answers, request by request: a list consumed in order, or a function of the
 * request and its 0-based index (for replies that depend on what the model was sent).
 */
export type ModelScript =
  | readonly ModelTurn[]
  | ((request: ChatCompletionRequest, turnIndex: number) => ModelTurn | Promise<ModelTurn>);

export interface ScriptedModelServer {
  /** `http://127.0.0.1:<port>/v1`, the `baseURL` of an OpenAI-compatible provider. */
  baseUrl: string;
  /** Every parsed chat-completion request body, in arrival order (live: it grows as requests come). */
  requests: ChatCompletionRequest[];
  /** Resolves with `requests[index]` once it has arrived (0-based; rejects after `timeoutMs`). */
  waitForRequest(index: number, timeoutMs?: number): Promise<ChatCompletionRequest>;
  /** Resolves once the client of `requests[index]` went away before its response ended. */
  waitForDisconnect(index: number, timeoutMs?: number): Promise<void>;
  /** Cuts open connections (hanging turns included) and stops listening. */
  close(): Promise<void>;
}

const DEFAULT_WAIT_MS = 5_000;

/** The text of a request's last user message (its text parts joined), to script replies by. */
export function lastUserText(request: ChatCompletionRequest): string {
  const user = request.messages.findLast((message) => message.role === 'user');
  const content = user?.content;
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => String(part.text ?? '')).join('');
}

/** An OpenAI-style error body, as the AI SDK's error handler parses it. */
function errorBody(message: string, type: string): unknown {
  return { error: { message, type, param: null, code: null } };
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function sendTurnError(response: http.ServerResponse, turn: { status: number; body: unknown }): void {
  if (typeof turn.body === 'string') {
    response.writeHead(turn.status, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(turn.body);
    return;
  }
  sendJson(response, turn.status, turn.body);
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseRequest(text: string): ChatCompletionRequest | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body !== 'object' || body === null || !Array.isArray((body as { messages?: unknown }).messages)) {
      return undefined;
    }
    return body as ChatCompletionRequest;
  } catch {
    return undefined;
  }
}

/** Waits `milliseconds`, or less when `gone` settles first (the client disconnected meanwhile). */
function delay(milliseconds: number, gone: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, milliseconds);
    }),
    gone,
  ]).finally(() => clearTimeout(timer));
}

async function streamReply(response: http.ServerResponse, reply: ModelReply, gone: Promise<void>): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let textDeltas = 0;
  for (const chunk of replyChunks(reply)) {
    const content = (chunk as { choices?: Array<{ delta?: { content?: unknown } }> }).choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content !== '') {
      textDeltas += 1;
      if (textDeltas > 1 && reply.turn.deltaDelayMs !== undefined) await delay(reply.turn.deltaDelayMs, gone);
      if (response.destroyed) return;
    }
    response.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  response.end('data: [DONE]\n\n');
}

/**
 * A real OpenAI-compatible Chat Completions server on 127.0.0.1 that answers from a script, for
 * integration tests that drive the genuine AI SDK provider over HTTP instead of a mocked model.
 * `POST /v1/chat/completions` streams Server-Sent Events as OpenAI does when `stream` is true (role,
 * content and indexed tool-call deltas, a finish reason, usage when asked, `[DONE]`) and answers
 * one JSON completion otherwise. A request for which the script has no turn gets a non-retryable
 * 400 naming the problem, so a test fails at once instead of after the SDK's retries.
 *
 * @example
 * const server = await startScriptedModelServer([{ text: ['Hello', ' there'] }]);
 * const model = createOpenAICompatible({ name: 'scripted', baseURL: server.baseUrl })('scripted-1');
 * // … drive the model, then inspect server.requests[0].messages
 * await server.close();
 */
export async function startScriptedModelServer(script: ModelScript): Promise<ScriptedModelServer> {
  const requests: ChatCompletionRequest[] = [];
  const disconnected = new Set<number>();
  const changes = new EventEmitter();
  let closed = false;

  const nextTurn = async (body: ChatCompletionRequest, index: number): Promise<ModelTurn | undefined> =>
    typeof script === 'function' ? script(body, index) : script[index];

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    const { pathname } = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (pathname !== '/v1/chat/completions') {
      return sendJson(response, 404, errorBody(`no route ${pathname}`, 'not_found'));
    }
    if (request.method !== 'POST') {
      return sendJson(response, 405, errorBody('use POST', 'invalid_request_error'));
    }
    const body = parseRequest(await readBody(request));
    if (body === undefined) {
      return sendJson(response, 400, errorBody('expected a JSON object with messages', 'invalid_request_error'));
    }
    const index = requests.push(body) - 1;
    const gone = new Promise<void>((resolve) => {
      response.on('close', () => {
        if (response.writableFinished) return;
        disconnected.add(index);
        changes.emit('change');
        resolve();
      });
    });
    changes.emit('change');

    const turn = await nextTurn(body, index);
    if (turn === undefined) {
      const message = `scripted model server: no turn scripted for request ${index} (0-based)`;
      return sendJson(response, 400, errorBody(message, 'script_exhausted'));
    }
    if (turn.delayMs !== undefined) await delay(turn.delayMs, gone);
    if (disconnected.has(index)) return;
    if ('status' in turn) return sendTurnError(response, turn);
    if ('hang' in turn) {
      // Headers go out so the client's fetch resolves; the body never comes.
      const contentType = body.stream === true ? 'text/event-stream; charset=utf-8' : 'application/json';
      response.writeHead(200, { 'content-type': contentType });
      response.flushHeaders();
      return;
    }
    const reply: ModelReply = { turn, request: body, turnIndex: index };
    if (body.stream === true) return streamReply(response, reply, gone);
    sendJson(response, 200, replyCompletion(reply));
  };

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const message = `scripted model server failed: ${error instanceof Error ? error.message : String(error)}`;
      if (response.headersSent) response.destroy();
      else sendJson(response, 400, errorBody(message, 'script_failed'));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const waitFor = (isDone: () => boolean, what: string, timeoutMs: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (isDone()) finish();
        else if (closed) finish(new Error(`scripted model server closed before ${what}`));
      };
      const timer = setTimeout(
        () => finish(new Error(`no ${what} within ${timeoutMs} ms (${requests.length} requests so far)`)),
        timeoutMs,
      );
      const finish = (error?: Error) => {
        clearTimeout(timer);
        changes.off('change', check);
        if (error) reject(error);
        else resolve();
      };
      changes.on('change', check);
      check();
    });

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    async waitForRequest(index, timeoutMs = DEFAULT_WAIT_MS) {
      await waitFor(() => requests.length > index, `request ${index}`, timeoutMs);
      return requests[index] as ChatCompletionRequest;
    },
    waitForDisconnect(index, timeoutMs = DEFAULT_WAIT_MS) {
      return waitFor(() => disconnected.has(index), `disconnect of request ${index}`, timeoutMs);
    },
    async close() {
      closed = true;
      changes.emit('change');
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
