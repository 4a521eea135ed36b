import type { CallToolResult } from '@ai-sdk/mcp';
import { dynamicTool, jsonSchema, type Tool, type ToolExecutionOptions } from 'ai';
import { describe, expect, it } from 'vitest';
import { dropFinalEchoes } from '../chat/final-tool-outputs.js';
import { type LiveCall, withLiveOutput } from './live-exec-tool.js';
import type { LiveOutputPiece } from './live-output.js';

const RESULT: CallToolResult = { content: [{ type: 'text', text: '{"exitCode":0}' }], isError: false };
const OPTIONS: ToolExecutionOptions = { toolCallId: 'c1', messages: [] };
const base = dynamicTool({ inputSchema: jsonSchema({ type: 'object' }), execute: async () => 'unused' });

/** A call the test drives: output and the end come when it says. */
function scriptedCall() {
  let output!: (piece: LiveOutputPiece) => void;
  let finish!: (result: CallToolResult) => void;
  let fail!: (error: unknown) => void;
  let signal!: AbortSignal;
  const call: LiveCall = (_input, callSignal, onOutput) => {
    output = onOutput;
    signal = callSignal;
    return new Promise((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
  };
  return {
    call,
    output: (piece: LiveOutputPiece) => output(piece),
    finish: (result: CallToolResult) => finish(result),
    fail: (error: unknown) => fail(error),
    signal: () => signal,
  };
}

function iterate(tool: Tool, options = OPTIONS) {
  if (!tool.execute) throw new Error('the tool has no execute');
  return (tool.execute({}, options) as AsyncIterable<unknown>)[Symbol.asyncIterator]();
}

describe('withLiveOutput', () => {
  it('yields the output so far as it comes, folding what came meanwhile, then the unchanged result, marked final', async () => {
    const driven = scriptedCall();
    const values = iterate(withLiveOutput(base, driven.call));
    const first = values.next();
    driven.output({ stream: 'stdout', text: 'a\n' });
    expect((await first).value).toEqual({ output: [{ stream: 'stdout', text: 'a\n' }], omittedBytes: 0 });
    driven.output({ stream: 'stdout', text: 'b\n' });
    driven.output({ stream: 'stderr', text: 'c\n' });
    expect((await values.next()).value).toEqual({
      output: [
        { stream: 'stdout', text: 'a\nb\n' },
        { stream: 'stderr', text: 'c\n' },
      ],
      omittedBytes: 0,
    });
    driven.finish(RESULT);
    const final = await values.next();
    expect(final.value).toBe(RESULT);
    expect(
      dropFinalEchoes({ type: 'tool-output-available', toolCallId: 'c1', output: final.value, preliminary: true }),
    ).toEqual([]);
    expect((await values.next()).done).toBe(true);
    expect(driven.signal().aborted).toBe(false);
  });

  it("fails as the call fails, and ends the call when its consumer stops or the call's signal aborts", async () => {
    const failing = scriptedCall();
    const failed = iterate(withLiveOutput(base, failing.call)).next();
    failing.fail(new Error('HTTP 429'));
    await expect(failed).rejects.toThrow('HTTP 429');

    const left = scriptedCall();
    const values = iterate(withLiveOutput(base, left.call));
    const first = values.next();
    left.output({ stream: 'stdout', text: 'a\n' });
    await first;
    await values.return?.(undefined);
    expect(left.signal().aborted).toBe(true);

    const stopped = new AbortController();
    const aborted = scriptedCall();
    void iterate(withLiveOutput(base, aborted.call), { ...OPTIONS, abortSignal: stopped.signal }).next();
    stopped.abort();
    expect(aborted.signal().aborted).toBe(true);
  });

  it('keeps the tool as it was but for execute', () => {
    const wrapped = withLiveOutput(base, scriptedCall().call);
    expect({ ...wrapped, execute: undefined }).toEqual({ ...base, execute: undefined });
  });
});
