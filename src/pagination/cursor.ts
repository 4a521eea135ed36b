import { ServiceError } from '../errors.js';

/** A page of a listing: `nextCursor` is null on the last page. */
export interface Page<Item> {
  items: Item[];
  nextCursor: string | null;
}

/** Where a listing ordered by (time, key), either way round, continues: the last item's time and key. */
export interface CursorPosition {
  at: number;
  key: string;
}

/** An opaque cursor: base64url of the position, never meant to be read or built by a client. */
export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.at, position.key])).toString('base64url');
}

/** Reads a cursor this service minted; anything else is a 400 `VALIDATION_FAILED` on `cursor`. */
export function decodeCursor(cursor: string): CursorPosition {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      Number.isSafeInteger(value[0]) &&
      typeof value[1] === 'string' &&
      value[1].length <= 200
    ) {
      return { at: value[0] as number, key: value[1] };
    }
  } catch {
    // Reported below like any other malformed cursor.
  }
  throw new ServiceError('VALIDATION_FAILED', 'Query cursor: not a cursor this service returned.', {
    errors: [{ path: 'cursor', message: 'not a cursor this service returned' }],
  });
}
