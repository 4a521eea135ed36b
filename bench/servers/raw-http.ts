import http from 'node:http';

/** Baseline: the least a Node HTTP server can do to answer a health check. */
const body = JSON.stringify({ status: 'ok' });
const server = http.createServer((request, response) => {
  if (request.url === '/healthz') {
    response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    response.end(body);
    return;
  }
  response.writeHead(404).end();
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
