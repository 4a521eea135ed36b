import type { z } from 'zod';
import { SANDBOX_TOOL_NAMES, type SandboxToolName } from '../../config.js';
import { sandboxToolDefinitions } from './definitions.js';
import type { ToolErrorCode } from './tool-context.js';

/** At most this many problems are described; the first ones are enough to fix a call. */
const MAX_DESCRIBED_ISSUES = 5;
/** Problem texts can quote a caller's key names: each is cut to this many characters. */
const MAX_ISSUE_CHARACTERS = 200;

export type CheckedArguments =
  | { ok: true; tool: SandboxToolName; input: Record<string, unknown> }
  | { ok: false; refusal: { code: ToolErrorCode; message: string } };

function isToolName(value: unknown): value is SandboxToolName {
  return typeof value === 'string' && (SANDBOX_TOOL_NAMES as readonly string[]).includes(value);
}

function describeIssues(tool: SandboxToolName, error: z.ZodError): string {
  const problems = error.issues.slice(0, MAX_DESCRIBED_ISSUES).map((issue) => {
    const text = `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
    return text.length > MAX_ISSUE_CHARACTERS ? `${text.slice(0, MAX_ISSUE_CHARACTERS)}…` : text;
  });
  const more =
    error.issues.length > MAX_DESCRIBED_ISSUES ? ` (and ${error.issues.length - MAX_DESCRIBED_ISSUES} more)` : '';
  return `Invalid arguments for ${tool}: ${problems.join('; ')}${more}.`;
}

/**
 * Checks a `tools/call` against the curated tools: an unknown name is `UNKNOWN_TOOL`, arguments
 * that break the tool's strict schema (a NUL byte in a command, a missing path, an unknown key)
 * are `INVALID_INPUT` with a message naming each field and its limit. Nothing is touched either way.
 *
 * @example
 * checkToolArguments(config.sandbox, 'sandbox_exec', { command: 'ls\u0000' });
 * // → { ok: false, refusal: { code: 'INVALID_INPUT', message: 'Invalid arguments for sandbox_exec: command: …' } }
 */
export function checkToolArguments(
  limits: Parameters<typeof sandboxToolDefinitions>[0],
  name: unknown,
  args: unknown,
): CheckedArguments {
  if (!isToolName(name)) {
    return {
      ok: false,
      refusal: {
        code: 'UNKNOWN_TOOL',
        message: `There is no such tool; the tools are ${SANDBOX_TOOL_NAMES.join(', ')}.`,
      },
    };
  }
  const definition = sandboxToolDefinitions(limits).find((candidate) => candidate.name === name);
  const parsed = definition?.inputSchema.safeParse(args ?? {});
  if (!parsed?.success) {
    return {
      ok: false,
      refusal: {
        code: 'INVALID_INPUT',
        message: parsed ? describeIssues(name, parsed.error) : `Invalid arguments for ${name}.`,
      },
    };
  }
  return { ok: true, tool: name, input: parsed.data as Record<string, unknown> };
}
