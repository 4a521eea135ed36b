import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

/**
 * Baselines: the least a Node HTTP server can do to answer a health check (`GET /healthz`), and to
 * take an upload (`POST /upload`: the raw body piped to a file, then deleted).
 */
const directory = await mkdtemp(path.join(tmpdir(), 'mordn-bench-raw-'));
const body = JSON.stringify({ status: 'ok' });
let uploads = 0;
const server = http.createServer((request, response) => {
  if (request.url === '/healthz') {
    response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    response.end(body);
    return;
  }
  if (request.url === '/upload' && request.method === 'POST') {
    uploads += 1;
    const target = path.join(directory, `upload-${uploads}`);
    pipeline(request, createWriteStream(target))
      .then(() => rm(target))
      .then(() => response.writeHead(201, { 'Content-Type': 'application/json' }).end('{}'))
      .catch(() => response.writeHead(500).end());
    return;
  }
  response.writeHead(404).end();
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
