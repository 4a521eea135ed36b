import type { z } from 'zod';
import { type FieldError, ServiceError } from './errors.js';

function joinPath(path: readonly PropertyKey[]): string {
  return path.map((segment) => String(segment)).join('.');
}

/**
 * Flattens zod issues into field errors whose `path` names the exact offending key. An unknown key
 * is reported at its own path (`runtime.sandbox.provider`), not at its parent object.
 */
export function toFieldErrors(error: z.ZodError): FieldError[] {
  const fieldErrors: FieldError[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        fieldErrors.push({ path: joinPath([...issue.path, key]), message: 'is not a recognized key' });
      }
      continue;
    }
    fieldErrors.push({ path: joinPath(issue.path), message: issue.message });
  }
  return fieldErrors;
}

/** One readable sentence naming every offending field, for the problem `detail`. */
export function describeFieldErrors(subject: string, errors: FieldError[]): string {
  const parts = errors.map((error) => (error.path ? `${error.path}: ${error.message}` : error.message));
  return `Invalid ${subject}: ${parts.join('; ')}.`;
}

/**
 * Parses `value` with `schema` or throws a 400 `VALIDATION_FAILED` that names each offending field.
 *
 * @example
 * const body = parseOrThrow(CreateTenantBody, await request.json(), 'request body');
 */
export function parseOrThrow<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  subject: string,
): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = toFieldErrors(result.error);
  throw new ServiceError('VALIDATION_FAILED', describeFieldErrors(subject, errors), { errors });
}
