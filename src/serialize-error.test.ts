import { Writable } from 'node:stream';
import { APICallError, InvalidToolInputError, JSONParseError, RetryError, TypeValidationError } from 'ai';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { serializeError } from './serialize-error.js';

const CANARY = 'canary-4e1d0b';

function providerFailure(): APICallError {
  return new APICallError({
    message: 'The model is overloaded.',
    url: 'https://api.provider.example/v1/chat/completions',
    requestBodyValues: { messages: [{ role: 'user', content: `tell me about ${CANARY}` }] },
    statusCode: 503,
    responseBody: `{"error":"overloaded while reading ${CANARY}"}`,
    isRetryable: true,
    data: { echoed: CANARY },
  });
}

describe('serializeError', () => {
  it("keeps a provider error's diagnosis and drops the request and response it carries", () => {
    const logged = serializeError(providerFailure());
    expect(logged).toMatchObject({
      type: 'APICallError',
      name: 'AI_APICallError',
      message: 'The model is overloaded.',
      statusCode: 503,
      isRetryable: true,
      url: 'https://api.provider.example/v1/chat/completions',
    });
    expect(JSON.stringify(logged)).not.toContain(CANARY);
  });

  it('follows retries and causes with the same rules', () => {
    const retried = new RetryError({
      message: 'Failed after 3 attempts. Last error: The model is overloaded.',
      reason: 'maxRetriesExceeded',
      errors: [providerFailure(), providerFailure()],
    });
    const logged = serializeError(new Error('chat step failed', { cause: retried }));
    expect(logged.cause).toMatchObject({ type: 'RetryError', reason: 'maxRetriesExceeded' });
    expect(logged.cause?.lastError).toMatchObject({ type: 'APICallError', statusCode: 503 });
    expect(JSON.stringify(logged)).not.toContain(CANARY);
  });

  it('leaves out messages that quote what they rejected, stack head included', () => {
    const quoting = [
      new TypeValidationError({ value: { text: CANARY }, cause: new Error('expected a number') }),
      new JSONParseError({ text: `{"answer": "${CANARY}`, cause: new Error('Unexpected end') }),
      new InvalidToolInputError({ toolName: 'lookup', toolInput: `{"q":"${CANARY}"}`, cause: new Error('bad') }),
      (() => {
        try {
          JSON.parse(`${CANARY} is not JSON`);
        } catch (error) {
          return error;
        }
      })(),
    ];
    for (const error of quoting) {
      const logged = serializeError(error);
      expect(logged.type).toMatch(/Error$/);
      expect(logged.message).toBeUndefined();
      expect(logged.stack).toMatch(/\n {4}at /);
      expect(JSON.stringify(logged)).not.toContain(CANARY);
    }
  });

  it('keeps the message and stack of an ordinary error, and names what is not an error', () => {
    const logged = serializeError(new Error('storage refused the write'));
    expect(logged).toMatchObject({ type: 'Error', message: 'storage refused the write' });
    expect(logged.stack).toContain('storage refused the write');
    expect(serializeError('Client connection prematurely closed.')).toEqual({
      type: 'string',
      message: 'Client connection prematurely closed.',
    });
    expect(serializeError({ messages: [CANARY] })).toEqual({ type: 'object' });
  });

  it("is the logger's serializer for err", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const logger = createLogger({ level: 'info', destination });
    logger.error({ err: providerFailure() }, 'chat failed');
    logger.error(providerFailure());
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(JSON.parse(line).err).toMatchObject({ type: 'APICallError', statusCode: 503 });
      expect(line).not.toContain(CANARY);
    }
  });
});
