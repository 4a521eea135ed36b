import { type Attributes, context, type Span, SpanKind, trace } from '@opentelemetry/api';
import { extractFromMcpMeta } from './propagation.js';
import { endWithError, mordnTracer, withinSpan } from './tracer.js';

/** One MCP request on the service side, open until its answer (an event stream's end, for live output). */
export interface McpRequestTrace {
  /** Runs the request's handling with this span active (the sandbox command's span goes under it). */
  within<T>(fn: () => T): T;
  end(error?: unknown): void;
}

/**
 * Starts the span of an MCP request (`tools/call sandbox_exec`), a child of the trace context in
 * `params._meta.traceparent` when the client sent one, else of the active one (the HTTP request's,
 * which joined the client's `traceparent` header). `attributes` are asked for only when it is recorded.
 */
export function startMcpRequestTrace(message: unknown, attributes: () => Attributes): McpRequestTrace {
  const record = message as { method?: unknown; id?: unknown; params?: { name?: unknown } } | undefined;
  const method = typeof record?.method === 'string' ? record.method : 'unknown';
  const toolName = method === 'tools/call' && typeof record?.params?.name === 'string' ? record.params.name : undefined;
  const parent = extractFromMcpMeta(message, context.active());
  const span = mordnTracer.startSpan(
    toolName ? `${method} ${toolName}` : method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': method,
        ...(toolName ? { 'gen_ai.tool.name': toolName, 'gen_ai.operation.name': 'execute_tool' } : {}),
        ...(typeof record?.id === 'string' || typeof record?.id === 'number'
          ? { 'jsonrpc.request.id': String(record.id) }
          : {}),
      },
    },
    parent,
  );
  if (span.isRecording()) span.setAttributes(attributes());
  let open = true;
  return {
    within: (fn) => withinSpan(parent, span, fn),
    end: (error) => {
      if (!open) return;
      open = false;
      if (error === undefined) span.end();
      else endWithError(span, error);
    },
  };
}

/** What a sandbox tool's result says about the command it ran. */
interface CommandFacts {
  exitCode?: number | null;
  durationMs?: number;
  cpuSeconds?: number;
  timedOut?: boolean;
  outOfMemory?: boolean;
}

/**
 * Runs one sandbox tool call under its own span (`sandbox sandbox_exec`): for a command, its exit
 * code, duration, CPU-seconds (when the backend measures them) and whether it was killed (timeout,
 * memory limit, abort). The command's text only with `captureContent`.
 */
export async function traceSandboxCall<T>(
  tool: string,
  input: Record<string, unknown>,
  options: { captureContent: boolean; attributes?: Attributes },
  run: () => Promise<T>,
): Promise<T> {
  const span = mordnTracer.startSpan(`sandbox ${tool}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      'mordn.sandbox.tool': tool,
      ...(options.captureContent && typeof input.command === 'string' ? { 'process.command_line': input.command } : {}),
      ...options.attributes,
    },
  });
  if (!span.isRecording()) {
    span.end();
    return run();
  }
  try {
    const result = await context.with(trace.setSpan(context.active(), span), run);
    recordCommand(span, result as CommandFacts);
    span.end();
    return result;
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
}

function recordCommand(span: Span, facts: CommandFacts | undefined): void {
  if (!facts || typeof facts !== 'object' || !('exitCode' in facts)) return;
  const killed = facts.exitCode === null || facts.timedOut === true || facts.outOfMemory === true;
  span.setAttribute('mordn.sandbox.killed', killed);
  if (typeof facts.exitCode === 'number') span.setAttribute('process.exit.code', facts.exitCode);
  if (typeof facts.durationMs === 'number') span.setAttribute('mordn.sandbox.duration_ms', facts.durationMs);
  if (typeof facts.cpuSeconds === 'number') span.setAttribute('mordn.sandbox.cpu_seconds', facts.cpuSeconds);
  if (facts.timedOut) span.setAttribute('mordn.sandbox.timed_out', true);
  if (facts.outOfMemory) span.setAttribute('mordn.sandbox.out_of_memory', true);
}
