import { safeValidateUIMessages, type UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { INTERRUPTED_TOOL_ERROR, markInterrupted, settleAnswer } from './interrupted-message.js';

const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] };

function cutShort(): UIMessage {
  return {
    id: 'a1',
    role: 'assistant',
    metadata: { custom: 1 },
    parts: [
      { type: 'step-start' },
      { type: 'reasoning', text: 'thinking', state: 'streaming' },
      { type: 'text', text: 'Half an', state: 'streaming' },
      { type: 'dynamic-tool', toolName: 'sandbox_exec', toolCallId: 'c1', state: 'input-available', input: {} },
      { type: 'tool-lookup', toolCallId: 'c2', state: 'input-streaming', input: { q: 'we' } },
      {
        type: 'tool-confirm',
        toolCallId: 'c3',
        state: 'approval-requested',
        input: {},
        approval: { id: 'ap1' },
      },
      {
        type: 'dynamic-tool',
        toolName: 'sandbox_exec',
        toolCallId: 'c4',
        state: 'output-available',
        input: { command: 'make' },
        output: { output: [{ stream: 'stdout', text: 'line-1\n' }], omittedBytes: 0 },
        preliminary: true,
      },
      {
        type: 'dynamic-tool',
        toolName: 'sandbox_exec',
        toolCallId: 'c5',
        state: 'output-available',
        input: { command: 'true' },
        output: { content: [] },
      },
    ] as UIMessage['parts'],
  };
}

describe('markInterrupted', () => {
  it('closes open text and tool calls (live output dropped), leaves approvals waiting and results alone, and records the reason beside other metadata', async () => {
    const marked = markInterrupted(cutShort(), 'timeout');
    expect(marked.metadata).toEqual({ custom: 1, mordn: { interrupted: { reason: 'timeout' } } });
    expect(marked.parts.map((part) => ('state' in part ? part.state : part.type))).toEqual([
      'step-start',
      'done',
      'done',
      'output-error',
      'output-error',
      'approval-requested',
      'output-error',
      'output-available',
    ]);
    expect(marked.parts[3]).toMatchObject({ errorText: INTERRUPTED_TOOL_ERROR, input: {} });
    expect(marked.parts[4]).toMatchObject({ errorText: INTERRUPTED_TOOL_ERROR, input: { q: 'we' } });
    expect(marked.parts[6]).toEqual({
      type: 'dynamic-tool',
      toolName: 'sandbox_exec',
      toolCallId: 'c4',
      state: 'output-error',
      input: { command: 'make' },
      errorText: INTERRUPTED_TOOL_ERROR,
    });
    expect(marked.parts[7]).toMatchObject({ state: 'output-available', output: { content: [] } });
    const validated = await safeValidateUIMessages({ messages: [user, marked] });
    expect(validated.success ? undefined : validated.error).toBeUndefined();
  });
});

describe('settleAnswer', () => {
  const outcome = { status: 'unknown' as const };

  it('stores an answer the model finished as it is, even when its client left just after', () => {
    const finished = { ...cutShort(), parts: [{ type: 'text' as const, text: 'Done.', state: 'done' as const }] };
    const settled = settleAnswer(
      { messages: [user, finished], responseMessage: finished, isAborted: false, outcome, finishReason: 'stop' },
      'stop',
    );
    expect(settled).toEqual({ messages: [user, finished], interrupted: undefined });
  });

  it('marks an answer cut short with its reason, and only closes one that failed', () => {
    const answer = cutShort();
    const stopped = settleAnswer(
      { messages: [user, answer], responseMessage: answer, isAborted: true, outcome },
      'stop',
    );
    expect(stopped.interrupted).toBe('stop');
    expect(stopped.messages[0]).toBe(user);
    expect(stopped.messages[1]?.metadata).toMatchObject({ mordn: { interrupted: { reason: 'stop' } } });

    const failed = settleAnswer(
      { messages: [user, answer], responseMessage: answer, isAborted: false, outcome, finishReason: 'error' },
      undefined,
    );
    expect(failed.interrupted).toBeUndefined();
    expect(failed.messages[1]?.metadata).toEqual({ custom: 1 });
    expect(failed.messages[1]?.parts[2]).toMatchObject({ state: 'done' });
  });
});
