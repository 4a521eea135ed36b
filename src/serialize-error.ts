/** What a log line says about an error: its kind and diagnostics, never the data it carried. */
export interface SerializedError {
  type: string;
  /** The error's `name` where it differs from its class (`AI_APICallError`). */
  name?: string;
  message?: string;
  stack?: string;
  code?: string | number;
  statusCode?: number;
  isRetryable?: boolean;
  url?: string;
  reason?: string;
  cause?: SerializedError;
  lastError?: SerializedError;
}

const AI_SDK_MARKER = Symbol.for('vercel.ai.error');
/**
 * AI SDK errors whose message is a diagnosis (the provider's own error text, a missing key or
 * model). Every other AI SDK error may quote the conversation in its message: a type validation
 * or JSON parse error embeds the value it rejected, an invalid tool input the model's arguments.
 */
const AI_SDK_DIAGNOSTIC_ERRORS = new Set([
  'AI_APICallError',
  'AI_RetryError',
  'AI_EmptyResponseBodyError',
  'AI_LoadAPIKeyError',
  'AI_LoadSettingError',
  'AI_NoSuchModelError',
  'AI_NoSuchProviderError',
  'AI_NoSuchToolError',
  'AI_UnsupportedFunctionalityError',
  'AI_NoOutputGeneratedError',
  'AI_NoContentGeneratedError',
  'AI_MCPClientError',
]);
/** JSON.parse quotes the text it could not parse. */
const QUOTING_ERRORS = new Set(['SyntaxError']);
const MAX_DEPTH = 3;

function isAiSdkError(error: Error): boolean {
  return (error as unknown as Record<symbol, unknown>)[AI_SDK_MARKER] === true;
}

/** The stack without its first line's message, for errors whose message is not logged. */
function stackWithoutMessage(error: Error): string | undefined {
  const { stack } = error;
  if (typeof stack !== 'string') return undefined;
  const head = `${error.name}: ${error.message}`;
  if (stack.startsWith(head)) return `${error.name}${stack.slice(head.length)}`;
  const frames = stack.indexOf('\n    at ');
  return frames >= 0 ? `${error.name}${stack.slice(frames)}` : undefined;
}

/**
 * The log form of anything thrown, used as the logger's `err` serializer. It copies chosen fields
 * only — type, message, stack, codes, the provider's status and endpoint, causes — so what an error
 * object carries besides (an AI SDK `APICallError`'s `requestBodyValues` and `responseBody`, a
 * validation error's `value`, a tool error's input) never reaches a log line. Messages that may
 * quote the conversation are left out, with their stack's first line.
 *
 * @example
 * logger.error({ err: error }, 'chat failed'); // err: { type: 'AI_APICallError', message, statusCode, url }
 */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (!(error instanceof Error)) {
    return typeof error === 'string' ? { type: 'string', message: error } : { type: typeof error };
  }
  const fields = error as Error & Record<string, unknown>;
  const quotes = isAiSdkError(error) ? !AI_SDK_DIAGNOSTIC_ERRORS.has(error.name) : QUOTING_ERRORS.has(error.name);
  const type = typeof error.constructor === 'function' ? error.constructor.name : error.name;
  const serialized: SerializedError = { type };
  if (error.name && error.name !== type) serialized.name = error.name;
  if (!quotes) serialized.message = error.message;
  const stack = quotes ? stackWithoutMessage(error) : error.stack;
  if (stack !== undefined) serialized.stack = stack;
  if (typeof fields.code === 'string' || typeof fields.code === 'number') serialized.code = fields.code;
  if (typeof fields.statusCode === 'number') serialized.statusCode = fields.statusCode;
  if (typeof fields.isRetryable === 'boolean') serialized.isRetryable = fields.isRetryable;
  // The provider's endpoint; other errors' URLs (a failed download's) may be signed links.
  if (error.name === 'AI_APICallError' && typeof fields.url === 'string') serialized.url = fields.url;
  if (typeof fields.reason === 'string') serialized.reason = fields.reason;
  if (depth < MAX_DEPTH) {
    if (error.cause !== undefined) serialized.cause = serializeError(error.cause, depth + 1);
    if (fields.lastError !== undefined) serialized.lastError = serializeError(fields.lastError, depth + 1);
  }
  return serialized;
}
