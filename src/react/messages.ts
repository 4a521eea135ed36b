import type { FileUIPart, UIMessage } from 'ai';

/** Why Mordn stored an answer as cut short (`metadata.mordn.interrupted.reason`). */
export type Interruption = 'stop' | 'disconnect' | 'timeout' | 'failed';

/** The note shown under an answer that ended early, by reason. */
export const INTERRUPTION_NOTES: Record<Interruption, string> = {
  stop: 'Stopped before the answer was finished.',
  disconnect: 'Interrupted: the connection was lost.',
  timeout: 'Interrupted: the answer took too long.',
  failed: 'Interrupted: the server running the answer stopped.',
};

/** The interruption Mordn recorded on a message, if any. */
export function interruptionOf(message: UIMessage): Interruption | undefined {
  const metadata = message.metadata as { mordn?: { interrupted?: { reason?: string } } } | undefined;
  const reason = metadata?.mordn?.interrupted?.reason;
  return reason !== undefined && reason in INTERRUPTION_NOTES ? (reason as Interruption) : undefined;
}

/** The message with the interruption Mordn also stores for it, so the note shows before a reload. */
export function withInterruption(message: UIMessage, reason: Interruption): UIMessage {
  const metadata = (message.metadata ?? {}) as Record<string, unknown>;
  const mordn = (metadata.mordn ?? {}) as Record<string, unknown>;
  return { ...message, metadata: { ...metadata, mordn: { ...mordn, interrupted: { reason } } } };
}

/** What the chat endpoint answers for an upload (Mordn's `POST /v1/uploads`). */
export interface Upload {
  url: string;
  storagePath: string;
  filename: string;
  mediaType: string;
  size: number;
}

/**
 * A file part as Mordn returns it: uploads carry `filename` (and, fresh from the upload, `size`);
 * published files carry their facts in `providerMetadata.mordn.sandboxFile` while streaming and at
 * top level in history. A reference that no longer resolves comes back `unavailable: true` with an
 * empty `url` (so the history stays a valid list of AI SDK messages).
 */
export type ChatFile = FileUIPart & { size?: number; unavailable?: boolean };

/** A file part for `sendMessage`: Mordn finds the upload by its `storagePath`, not by its URL. */
export function toFilePart(upload: Upload): FileUIPart {
  return {
    type: 'file',
    mediaType: upload.mediaType,
    filename: upload.filename,
    url: upload.url,
    providerMetadata: { mordn: { storagePath: upload.storagePath } },
  };
}

/** The tool-call shape shared by static (`tool-<name>`) and dynamic (`dynamic-tool`) tool parts. */
export interface ToolCallPart {
  toolName: string;
  toolCallId: string;
  state: string;
  output?: unknown;
  errorText?: string;
  /** The output is a preliminary result: the call still runs. */
  preliminary?: boolean;
}

/** A part as a tool call, whichever of the AI SDK's two tool part shapes it has; undefined otherwise. */
export function toolCallOf(part: UIMessage['parts'][number]): ToolCallPart | undefined {
  if (part.type === 'dynamic-tool') return part;
  if (!part.type.startsWith('tool-') || !('toolCallId' in part)) return undefined;
  const { toolCallId, state, output, errorText, preliminary } = part as Omit<ToolCallPart, 'toolName'>;
  return { toolName: part.type.slice('tool-'.length), toolCallId, state, output, errorText, preliminary };
}

/** One stretch of a running command's output, all of one stream. */
export interface OutputPiece {
  stream: 'stdout' | 'stderr';
  text: string;
}

/**
 * The output a running `sandbox_exec` shows, from its preliminary result
 * (`{ output: [{ stream, text }], omittedBytes }`), cut to its last `maxLines` lines (pieces of one
 * stream merged); undefined for a call without one.
 */
export function liveOutputOf(part: ToolCallPart, maxLines = 200): OutputPiece[] | undefined {
  const pieces = (part.output as { output?: unknown } | undefined)?.output;
  if (!part.preliminary || !Array.isArray(pieces)) return undefined;
  const lines = (pieces as OutputPiece[]).flatMap(({ stream, text }) =>
    text.split(/(?<=\n)/).map((line) => ({ stream, text: line })),
  );
  const shown: OutputPiece[] = [];
  for (const line of lines.slice(-maxLines)) {
    const last = shown.at(-1);
    if (last?.stream === line.stream) last.text += line.text;
    else shown.push(line);
  }
  return shown;
}

/**
 * Why a tool call failed, in the tool's own words: the AI SDK's `errorText`, or the message of a
 * Mordn tool result marked `isError` (`content: [{ text: '{"error":{"message":…}}' }]`).
 */
export function toolFailureText(part: ToolCallPart): string | undefined {
  if (part.errorText) return part.errorText;
  const message = (toolOutputValue(part) as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof message === 'string' ? message : undefined;
}

/**
 * The value of a Mordn tool result: its `structuredContent`, or — for a result too large to carry
 * both (long or binary output) — the JSON text of its first content part.
 */
export function toolOutputValue(part: ToolCallPart): unknown {
  const output = part.output as { structuredContent?: unknown; content?: Array<{ text?: unknown }> } | undefined;
  if (output?.structuredContent !== undefined) return output.structuredContent;
  const text = output?.content?.[0]?.text;
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Whether a finished tool call's output was cut to fit (`truncated: true`, in either shape). */
export function toolOutputTruncated(part: ToolCallPart): boolean {
  return part.state === 'output-available' && (toolOutputValue(part) as { truncated?: unknown })?.truncated === true;
}
