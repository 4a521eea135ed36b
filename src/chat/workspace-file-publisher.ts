import { randomUUID } from 'node:crypto';
import type { ToolSet } from 'ai';
import type { ArtifactCarrier } from './artifact-carrier.js';
import type { LinkPublication, WorkspaceFilePublisher } from './link-guard.js';
import type { ChatRequestContext, ManagedSandboxIntegration } from './types.js';

const PUBLISH_TOOL = 'sandbox_publish_file';
/** The publish tool's error codes that mean the path names no regular file in the workspace. */
const MISSING_CODES = new Set(['NOT_FOUND', 'NOT_A_FILE', 'INVALID_PATH', 'SYMLINK']);

/** The `error.code` of a failed tool result (`{ isError, content: [{ text: '{"error":{…}}' }] }`). */
function errorCodeOf(result: unknown): string | undefined {
  const content = (result as { content?: Array<{ type?: string; text?: unknown }> } | null)?.content;
  const text = content?.find((part) => part.type === 'text')?.text;
  if (typeof text !== 'string') return undefined;
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The link guard's way into the user's workspace in a managed chat: the integration says whether
 * the user has a workspace (never creating one), and a file is published by executing the very
 * `sandbox_publish_file` tool the model has — a live call on the trusted connection under the
 * execution policy — with a call id of the engine's own. Only the carrier that call's verified
 * result minted (taken from `takeCarriers`) makes a download; nothing is built from text.
 */
export function createWorkspaceFilePublisher(input: {
  integration: ManagedSandboxIntegration;
  context: ChatRequestContext;
  tools: ToolSet;
  takeCarriers(toolCallId: string): readonly ArtifactCarrier[];
  abortSignal: AbortSignal;
}): WorkspaceFilePublisher {
  const { integration, context, tools, abortSignal } = input;
  return {
    hasWorkspace: () => integration.hasWorkspace?.(context) ?? Promise.resolve(false),
    async publish(path): Promise<LinkPublication> {
      const execute = tools[PUBLISH_TOOL]?.execute;
      // The tool is absent when the caller's credential does not grant it: policy says no.
      if (!execute) return { kind: 'refused' };
      const toolCallId = `mordn-link-${randomUUID()}`;
      let carriers: readonly ArtifactCarrier[] = [];
      let result: unknown;
      try {
        result = await execute({ path }, { toolCallId, messages: [], abortSignal });
      } catch {
        return { kind: 'refused' };
      } finally {
        // Nothing minted for this call may linger in the relay.
        carriers = input.takeCarriers(toolCallId);
      }
      const [carrier] = carriers;
      if (carrier) return { kind: 'published', carrier };
      const code = errorCodeOf(result);
      return code !== undefined && MISSING_CODES.has(code) ? { kind: 'missing' } : { kind: 'refused' };
    },
  };
}
