import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';
import { createSecretScrubber, REDACTED } from './secrets.js';
import { serializeError } from './serialize-error.js';

export type { Logger } from 'pino';

export interface CreateLoggerOptions {
  level: Config['logLevel'];
  /** Literal secret values to scrub from every line, in addition to anything key-shaped. */
  secrets?: readonly string[];
  /** Where lines go (default: stdout). Tests pass a stream to capture them. */
  destination?: DestinationStream;
}

/**
 * Structured JSON logs. Two layers keep secrets out: known secret fields are redacted by path, and
 * every serialized line is scrubbed of key-shaped strings and configured secret values, so even a
 * secret inside an error message never reaches the log. Conversation content stays out too: an
 * `err` is logged through `serializeError`, which copies its diagnostics and nothing it carries
 * (an AI SDK error's request body, a rejected value), so only debug lines may quote a chat.
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  const scrub = createSecretScrubber(options.secrets ?? []);
  return pino(
    {
      level: options.level,
      base: { service: 'mordn' },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: (error: unknown) => serializeError(error) },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          '*.headers.authorization',
          'key',
          '*.key',
          'apiKey',
          '*.apiKey',
          'token',
          '*.token',
          'secret',
          '*.secret',
          'password',
          '*.password',
        ],
        censor: REDACTED,
      },
      hooks: { streamWrite: scrub },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
