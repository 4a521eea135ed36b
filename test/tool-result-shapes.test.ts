import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/agents/config-schema.js';
import type { ArtifactCarrier } from '../src/chat/artifact-carrier.js';
import { createHostedSandboxes, toolResultValue } from '../src/hosted/create-hosted-sandboxes.js';
import { type ToolCallPart, toolFailureText, toolOutputTruncated, toolOutputValue } from '../src/react/messages.js';
import { hostedContext } from './support/chat-context.js';
import type { AgentFixture } from './support/fixtures.js';
import { startScriptedChatService } from './support/scripted-chat-service.js';
import type { TestService } from './support/service.js';
import { finalValue } from './support/tool-execution.js';

/**
 * The two shapes of a sandbox tool's result, as they reach a host and the React component: a small
 * result carries its value twice (the text JSON and `structuredContent`); one too large for both —
 * long or binary command output — carries only the text JSON, which says `truncated: true` when it
 * was cut. `toolResultValue` (mordn/server/hosted) and the React component read either.
 */

const ENABLED: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };

let service: TestService;
let fixture: AgentFixture;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ service, fixture, close } = await startScriptedChatService(() => ({ text: 'unused' }), {
    environment: { MORDN_SANDBOX_CALLS_PER_MINUTE: '1000' },
  }));
});
afterAll(() => close?.());

const context = (userId: string) => hostedContext(ENABLED, userId);

/** A finished tool part as the AI SDK hands it to the React component. */
const finished = (toolName: string, output: unknown): ToolCallPart => ({
  toolName,
  toolCallId: `call-${toolName}`,
  state: 'output-available',
  output,
});

describe('sandbox tool results in both shapes', () => {
  it('a small result carries structuredContent; binary output too large for both comes as text JSON only', async () => {
    const sandboxes = createHostedSandboxes({ apiKey: fixture.key, selfBaseUrl: service.deps.selfBaseUrl as string });
    const carriers: ArtifactCarrier[] = [];
    const built = await sandboxes.buildTools(context('shapes-user'), {
      abortSignal: new AbortController().signal,
      onArtifact: (carrier) => carriers.push(carrier),
    });
    const options = (toolCallId: string) => ({ toolCallId, messages: [], abortSignal: new AbortController().signal });
    try {
      const small = (await finalValue(
        built.tools.sandbox_exec?.execute?.({ command: 'echo hello' }, options('small')),
      )) as {
        structuredContent?: unknown;
        content: Array<{ type: string; text: string }>;
      };
      expect(small.structuredContent).toMatchObject({ exitCode: 0, stdout: 'hello\n', truncated: false });
      expect(JSON.parse(small.content[0]?.text ?? '')).toEqual(small.structuredContent);
      expect(toolResultValue(small)).toEqual(small.structuredContent);
      expect(toolOutputTruncated(finished('sandbox_exec', small))).toBe(false);

      // Control bytes escape to six characters each, twice over in the text: far past the limit.
      const binary = (await finalValue(
        built.tools.sandbox_exec?.execute?.(
          { command: 'head -c 300000 /dev/zero; head -c 300000 /dev/urandom' },
          options('binary'),
        ),
      )) as { structuredContent?: unknown; content: Array<{ type: string; text: string }>; isError?: boolean };
      expect(binary.isError).not.toBe(true);
      expect(binary.structuredContent).toBeUndefined();
      const value = toolResultValue(binary) as { exitCode: number; truncated: boolean; stdout: string };
      expect(value).toEqual(JSON.parse(binary.content[0]?.text ?? ''));
      expect(value.exitCode).toBe(0);
      expect(value.truncated).toBe(true);
      expect(value.stdout.length).toBeGreaterThan(1000);
      expect(toolOutputValue(finished('sandbox_exec', binary))).toEqual(value);
      expect(toolOutputTruncated(finished('sandbox_exec', binary))).toBe(true);

      // An error result is read from its text in either shape, and has no value.
      const failed = await built.tools.sandbox_read_file?.execute?.({ path: 'missing.txt' }, options('missing'));
      expect(toolResultValue(failed)).toBeUndefined();
      expect(toolFailureText(finished('sandbox_read_file', failed))).toMatch(/missing\.txt|not found|no such/i);

      // A publish is recognised whichever shape it came in (here the small one), and mints a carrier.
      await built.tools.sandbox_write_file?.execute?.({ path: 'a.txt', content: 'a' }, options('write'));
      await built.tools.sandbox_publish_file?.execute?.({ path: 'a.txt' }, options('publish'));
      expect(carriers.map((carrier) => carrier.toolCallId)).toEqual(['publish']);
    } finally {
      await built.close();
    }
  });

  it('reads a text-only result as the value it carries, and nothing from malformed or error results', () => {
    const text = { content: [{ type: 'text', text: '{"path":"a.txt","truncated":true}' }] };
    expect(toolResultValue(text)).toEqual({ path: 'a.txt', truncated: true });
    expect(toolResultValue({ ...text, isError: true })).toBeUndefined();
    expect(toolResultValue({ content: [{ type: 'text', text: 'not json' }] })).toBeUndefined();
    expect(toolResultValue({ content: [{ type: 'image', data: 'x' }] })).toBeUndefined();
    expect(toolResultValue(null)).toBeUndefined();
    expect(toolOutputTruncated({ ...finished('sandbox_exec', text), state: 'input-available' })).toBe(false);
  });
});
