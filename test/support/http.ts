import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A request through `node:http`, which (unlike fetch) can send a header twice, non-ASCII bytes,
 * or a body in chunks with pauses. Each character of a header value goes out as one byte (its
 * latin1 code): bodies are written as bytes, because node:http would otherwise send the head
 * with a string body's encoding (UTF-8).
 */
export function rawRequest(
  url: string,
  options: {
    method?: string;
    headers?: Array<[string, string]>;
    /** Chunks written one by one with `chunked` transfer encoding (no Content-Length). */
    chunks?: Array<string | Buffer>;
    body?: string | Buffer;
  } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const grouped: Record<string, string[]> = {};
    for (const [name, value] of options.headers ?? []) {
      grouped[name] = [...(grouped[name] ?? []), value];
    }
    // Node frames bodies of DELETE (and GET) requests only when told how: say it explicitly.
    if (options.chunks) grouped['Transfer-Encoding'] = ['chunked'];
    else if (options.body !== undefined) grouped['Content-Length'] ??= [String(Buffer.byteLength(options.body))];
    const request = http.request(url, { method: options.method ?? 'GET', headers: grouped }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(parts).toString() }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    if (options.chunks) {
      for (const chunk of options.chunks) request.write(Buffer.from(chunk));
    } else if (options.body !== undefined) {
      request.write(Buffer.from(options.body));
    }
    request.end();
  });
}
