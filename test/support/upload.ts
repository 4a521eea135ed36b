import type { TestService } from './service.js';
import { agentHeaders } from './service.js';

/** Uploads `bytes` as the multipart `file` field, over real HTTP. */
export async function upload(
  service: Pick<TestService, 'fetch'>,
  key: string,
  file: { bytes: Uint8Array | string; filename: string; type?: string },
  userId = 'user-1',
): Promise<Response> {
  const form = new FormData();
  const bytes = typeof file.bytes === 'string' ? new TextEncoder().encode(file.bytes) : file.bytes;
  form.set('file', new Blob([bytes], { type: file.type ?? 'application/octet-stream' }), file.filename);
  return service.fetch('/v1/uploads', { method: 'POST', headers: agentHeaders(key, userId), body: form });
}

/** A structurally valid PDF of exactly `size` bytes (header, padding comment, EOF marker). */
export function pdfOfSize(size: number): Uint8Array {
  const head = '%PDF-1.4\n%';
  const tail = '\n%%EOF\n';
  const bytes = new Uint8Array(size).fill(0x41);
  bytes.set(new TextEncoder().encode(head), 0);
  bytes.set(new TextEncoder().encode(tail), size - tail.length);
  return bytes;
}

/** A minimal valid 1×1 PNG. */
export const PNG_1X1 = Uint8Array.from(
  Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  ),
);
