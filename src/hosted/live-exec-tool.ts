import type { CallToolResult } from '@ai-sdk/mcp';
import type { Tool, ToolExecutionOptions } from 'ai';
import { finalToolOutput } from '../chat/final-tool-outputs.js';
import { createLiveOutput, type LiveOutput, type LiveOutputPiece } from './live-output.js';

/** Runs one call of the tool, handing each piece of live output to `onOutput` as it comes. */
export type LiveCall = (
  input: unknown,
  signal: AbortSignal,
  onOutput: (piece: LiveOutputPiece) => void,
) => Promise<CallToolResult>;

/**
 * `tool` with an `execute` that yields the command's output while it runs: an async iterable
 * whose values are preliminary results ({@link LiveOutput}, the latest output within 8 KiB),
 * one per batch of output that arrived since the last was taken, and whose last value is the
 * tool's result, unchanged. Its description, schema and `toModelOutput` stay the tool's own, so
 * the model sees what it saw without live output. A consumer that stops iterating, like an abort
 * of the call's signal, ends the HTTP exchange, which kills the command.
 *
 * @example
 * for await (const value of tools.sandbox_exec.execute({ command: 'make' }, options)) show(value);
 */
export function withLiveOutput(tool: Tool, call: LiveCall): Tool {
  return { ...tool, execute: (input: unknown, options: ToolExecutionOptions) => liveExecution(input, options, call) };
}

async function* liveExecution(
  input: unknown,
  options: ToolExecutionOptions,
  call: LiveCall,
): AsyncGenerator<LiveOutput | CallToolResult> {
  options.abortSignal?.throwIfAborted();
  const left = new AbortController();
  const signal = options.abortSignal ? AbortSignal.any([options.abortSignal, left.signal]) : left.signal;
  const live = createLiveOutput();
  let fresh = false;
  let settled: { result: CallToolResult } | { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  call(input, signal, (piece) => {
    live.add(piece.stream, piece.text);
    fresh = true;
    notify();
  }).then(
    (result) => {
      settled = { result };
      notify();
    },
    (error: unknown) => {
      settled = { error };
      notify();
    },
  );
  try {
    // Output that arrives while a value is being taken is folded into the next one.
    for (;;) {
      if (settled && 'error' in settled) throw settled.error;
      if (settled) {
        yield finalToolOutput(settled.result);
        return;
      }
      if (fresh) {
        fresh = false;
        yield live.snapshot();
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    if (!settled) left.abort(new DOMException('The tool call was given up.', 'AbortError'));
  }
}
