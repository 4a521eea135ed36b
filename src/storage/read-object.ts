import type { FileStorage } from './file-storage.js';

/**
 * The bytes of a stored object, read whole into memory, but never more than `maxBytes`: a body
 * longer than that (the object changed under its record) is cut off with an error instead of
 * being buffered. Throws `StorageObjectNotFoundError` when the object is gone.
 *
 * @example
 * const bytes = await readObject(storage, file.storagePath, file.size);
 */
export async function readObject(storage: FileStorage, key: string, maxBytes: number): Promise<Uint8Array> {
  const { body, size } = await storage.get(key);
  if (size > maxBytes) {
    body.destroy();
    throw new Error(`The stored object is ${size} bytes, more than the ${maxBytes} expected.`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of body) {
      received += (chunk as Buffer).byteLength;
      if (received > maxBytes) throw new Error(`The stored object is longer than the ${maxBytes} bytes expected.`);
      chunks.push(chunk as Buffer);
    }
  } finally {
    body.destroy();
  }
  return new Uint8Array(Buffer.concat(chunks, received));
}
