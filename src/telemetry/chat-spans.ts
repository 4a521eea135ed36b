import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { type Attributes, type Context, context, type Span, SpanKind, trace } from '@opentelemetry/api';
import { type LanguageModel, type Tool, type ToolExecutionOptions, type ToolSet, wrapLanguageModel } from 'ai';
import { endWithError, mordnTracer, withinSpan } from './tracer.js';

/** What the spans of a chat turn carry beyond their own facts. */
export interface ChatTelemetryOptions {
  /**
   * Attributes of the turn's span, e.g. tenant and agent ids and the user's keyed hash (never the
   * raw id); asked for only when the turn is recorded.
   */
  attributes?: () => Attributes;
  /** Record prompts, tool arguments and tool results on the spans (default false: never). */
  captureContent?: boolean;
}

/**
 * The spans of one chat turn: the turn (`invoke_agent`), each model call (`chat {model}`, GenAI
 * conventions with token usage) and each tool call (`execute_tool {name}`, a child of the model
 * call that asked for it, run with its context active so the MCP request carries `traceparent`).
 * Without a tracer provider (or when the turn is not sampled) models and tools are left as they are.
 */
export interface TurnTrace {
  /** The model, wrapped to trace its calls (an id string passes unchanged). */
  model(model: LanguageModel): LanguageModel;
  /** Wraps every tool's `execute` in place to trace its calls. */
  tools(tools: ToolSet): void;
  /** Ends the turn; `interrupted` names why it was cut short. */
  end(interrupted?: string): void;
  /** Ends the turn as failed. */
  fail(error: unknown): void;
}

/** A turn no one records: models and tools pass unchanged, and nothing is allocated per turn. */
const UNTRACED_TURN: TurnTrace = {
  model: (model) => model,
  tools: () => undefined,
  end: () => undefined,
  fail: () => undefined,
};

/**
 * Starts a turn's span under the active context (the HTTP request's span, or a host's own).
 *
 * @example
 * const turn = startTurnTrace(options.telemetry);
 * const model = turn.model(languageModel);
 * turn.tools(tools);
 * // …when the answer is stored:
 * turn.end();
 */
export function startTurnTrace(options: ChatTelemetryOptions = {}): TurnTrace {
  const parent = context.active();
  const span = mordnTracer.startSpan(
    'invoke_agent',
    { kind: SpanKind.INTERNAL, attributes: { 'gen_ai.operation.name': 'invoke_agent' } },
    parent,
  );
  if (!span.isRecording()) {
    span.end();
    return UNTRACED_TURN;
  }
  if (options.attributes) span.setAttributes(options.attributes());
  let ended = false;
  const once = (finish: () => void) => {
    if (ended) return;
    ended = true;
    finish();
  };
  const turnContext = trace.setSpan(parent, span);
  const captureContent = options.captureContent === true;
  /** The model call whose stream asked for each tool call: the tool's span goes under it. */
  const callers = new Map<string, Context>();
  return {
    model: (model) =>
      typeof model !== 'string' && model.specificationVersion === 'v3'
        ? traceModelCalls(model, turnContext, callers, captureContent)
        : model,
    tools: (tools) => {
      for (const [name, tool] of Object.entries(tools)) {
        tools[name] = traceToolCalls(name, tool, (id) => callers.get(id) ?? turnContext, captureContent);
      }
    },
    end: (interrupted) =>
      once(() => {
        if (interrupted) span.setAttribute('mordn.chat.interrupted', interrupted);
        span.end();
      }),
    fail: (error) => once(() => endWithError(span, error)),
  };
}

type V3Model = Exclude<LanguageModel, string> & { specificationVersion: 'v3' };

function traceModelCalls(
  model: V3Model,
  turnContext: Context,
  callers: Map<string, Context>,
  captureContent: boolean,
): LanguageModel {
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: 'v3',
      wrapStream: async ({ doStream, params }) => {
        const span = mordnTracer.startSpan(
          `chat ${model.modelId}`,
          {
            kind: SpanKind.CLIENT,
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': model.provider,
              'gen_ai.request.model': model.modelId,
              ...(captureContent ? { 'gen_ai.input.messages': JSON.stringify(params.prompt) } : {}),
            },
          },
          turnContext,
        );
        const spanContext = trace.setSpan(turnContext, span);
        let result: Awaited<ReturnType<typeof doStream>>;
        try {
          result = await context.with(spanContext, doStream);
        } catch (error) {
          endWithError(span, error);
          throw error;
        }
        const observe = (part: LanguageModelV3StreamPart) => {
          if (part.type === 'tool-call') callers.set(part.toolCallId, spanContext);
          else if (part.type === 'response-metadata') {
            if (part.modelId) span.setAttribute('gen_ai.response.model', part.modelId);
            if (part.id) span.setAttribute('gen_ai.response.id', part.id);
          } else if (part.type === 'finish') {
            const { inputTokens, outputTokens } = part.usage;
            if (inputTokens.total !== undefined) span.setAttribute('gen_ai.usage.input_tokens', inputTokens.total);
            if (outputTokens.total !== undefined) span.setAttribute('gen_ai.usage.output_tokens', outputTokens.total);
            span.setAttribute('gen_ai.response.finish_reasons', [part.finishReason.unified]);
          }
        };
        return { ...result, stream: observedStream(result.stream, observe, span) };
      },
    },
  });
}

/** The model's stream passed on part by part; the span ends with it, however it ends. */
function observedStream(
  source: ReadableStream<LanguageModelV3StreamPart>,
  observe: (part: LanguageModelV3StreamPart) => void,
  span: Span,
): ReadableStream<LanguageModelV3StreamPart> {
  const reader = source.getReader();
  let open = true;
  const finish = (error?: unknown) => {
    if (!open) return;
    open = false;
    if (error === undefined) span.end();
    else endWithError(span, error);
  };
  return new ReadableStream({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          finish();
          controller.close();
          return;
        }
        observe(next.value);
        controller.enqueue(next.value);
      } catch (error) {
        finish(error);
        controller.error(error);
      }
    },
    cancel(reason) {
      span.setAttribute('mordn.cancelled', true);
      finish();
      return reader.cancel(reason);
    },
  });
}

/** Whether a tool's final output reports a failure (an MCP `isError` result). */
function failed(output: unknown): boolean {
  return typeof output === 'object' && output !== null && (output as { isError?: unknown }).isError === true;
}

function traceToolCalls(
  name: string,
  tool: Tool,
  parentOf: (toolCallId: string) => Context,
  captureContent: boolean,
): Tool {
  const execute = tool.execute;
  if (!execute) return tool;
  const traced = (input: unknown, options: ToolExecutionOptions) => {
    const parent = parentOf(options.toolCallId);
    const span = mordnTracer.startSpan(
      `execute_tool ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': name,
          'gen_ai.tool.call.id': options.toolCallId,
          'gen_ai.tool.type': 'function',
          ...(captureContent ? { 'gen_ai.tool.call.arguments': JSON.stringify(input) } : {}),
        },
      },
      parent,
    );
    const settle = (output: unknown) => {
      span.setAttribute('mordn.tool.outcome', failed(output) ? 'error' : 'ok');
      if (captureContent) span.setAttribute('gen_ai.tool.call.result', JSON.stringify(output) ?? '');
      span.end();
    };
    const fail = (error: unknown) => {
      span.setAttribute('mordn.tool.outcome', 'error');
      endWithError(span, error);
    };
    let result: unknown;
    try {
      result = withinSpan(parent, span, () => execute.call(tool, input as never, options));
    } catch (error) {
      fail(error);
      throw error;
    }
    if (isAsyncIterable(result)) return tracedIterable(result, parent, span, settle, fail);
    return Promise.resolve(result).then(
      (output) => {
        settle(output);
        return output;
      },
      (error: unknown) => {
        fail(error);
        throw error;
      },
    );
  };
  return { ...tool, execute: traced } as Tool;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/** A tool's preliminary outputs (live output), each step run under the tool's span; the last is its result. */
async function* tracedIterable(
  iterable: AsyncIterable<unknown>,
  parent: Context,
  span: Span,
  settle: (output: unknown) => void,
  fail: (error: unknown) => void,
): AsyncGenerator<unknown> {
  const iterator = iterable[Symbol.asyncIterator]();
  let last: unknown;
  let done = false;
  try {
    for (;;) {
      const next = await withinSpan(parent, span, () => iterator.next());
      if (next.done) break;
      last = next.value;
      yield next.value;
    }
    done = true;
    settle(last);
  } catch (error) {
    done = true;
    fail(error);
    throw error;
  } finally {
    if (!done) {
      span.setAttribute('mordn.cancelled', true);
      settle(last);
      await iterator.return?.();
    }
  }
}
