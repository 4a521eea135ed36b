import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import yazl from 'yazl';

/** A pure-Python wheel built in memory: `import <module>` gives `VALUE`. */
export interface TestWheel {
  filename: string;
  bytes: Buffer;
  sha256: string;
}

function recordLine(name: string, content: Buffer): string {
  const digest = createHash('sha256').update(content).digest('base64url');
  return `${name},sha256=${digest},${content.length}`;
}

/**
 * Builds `<name>-<version>-py3-none-any.whl` whose module `<name>` defines `VALUE = <value>` (a
 * real wheel, as pip installs any: METADATA, WHEEL and a RECORD with every file's hash).
 */
export async function buildWheel(name: string, version: string, value: string): Promise<TestWheel> {
  const distInfo = `${name}-${version}.dist-info`;
  const files: Array<[string, Buffer]> = [
    [`${name}/__init__.py`, Buffer.from(`VALUE = ${JSON.stringify(value)}\n`)],
    [`${distInfo}/METADATA`, Buffer.from(`Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`)],
    [
      `${distInfo}/WHEEL`,
      Buffer.from('Wheel-Version: 1.0\nGenerator: mordn-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n'),
    ],
  ];
  const record = `${[...files.map(([path, content]) => recordLine(path, content)), `${distInfo}/RECORD,,`].join('\n')}\n`;
  files.push([`${distInfo}/RECORD`, Buffer.from(record)]);
  const zip = new yazl.ZipFile();
  for (const [path, content] of files) zip.addBuffer(content, path, { mtime: new Date(2026, 0, 1) });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  return {
    filename: `${name}-${version}-py3-none-any.whl`,
    bytes,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  };
}

/** An HTTP server on this machine that records every request it gets. */
export interface RecordingServer {
  url: string;
  port: number;
  /** `METHOD path` of every request, in order, with the Host header it carried. */
  requests: Array<{ method: string; path: string; host: string | undefined }>;
  close(): Promise<void>;
}

async function listen(server: Server, host: string, port = 0): Promise<{ url: string; port: number }> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${shown}:${address.port}`, port: address.port };
}

function recorded(server: Server, requests: RecordingServer['requests']): void {
  server.on('request', (request: IncomingMessage) => {
    requests.push({ method: request.method ?? '', path: request.url ?? '', host: request.headers.host });
  });
}

/**
 * A PEP 503 "simple" index serving `wheels` on `host` (127.0.0.1 unless told), with the files
 * under `/files/`: what `MORDN_SANDBOX_PACKAGE_INDEX_URL` points pip at in tests.
 */
export async function startPackageIndex(
  wheels: TestWheel[],
  options: { host?: string; port?: number } = {},
): Promise<RecordingServer & { indexUrl: string }> {
  const requests: RecordingServer['requests'] = [];
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0] ?? '';
    const project = /^\/simple\/([^/]+)\/?$/.exec(path)?.[1];
    if (path === '/simple/' || path === '/simple') {
      const links = [...new Set(wheels.map((wheel) => wheel.filename.split('-')[0]))]
        .map((name) => `<a href="${name}/">${name}</a>`)
        .join('\n');
      response.writeHead(200, { 'Content-Type': 'text/html' });
      response.end(`<!DOCTYPE html><html><body>${links}</body></html>`);
      return;
    }
    if (project) {
      const files = wheels.filter((wheel) => wheel.filename.split('-')[0]?.toLowerCase() === project.toLowerCase());
      if (files.length === 0) {
        response.writeHead(404).end();
        return;
      }
      const links = files.map(
        (wheel) => `<a href="../../files/${wheel.filename}#sha256=${wheel.sha256}">${wheel.filename}</a>`,
      );
      response.writeHead(200, { 'Content-Type': 'text/html' });
      response.end(`<!DOCTYPE html><html><body>${links.join('\n')}</body></html>`);
      return;
    }
    const wheel = wheels.find((candidate) => path === `/files/${candidate.filename}`);
    if (wheel) {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': wheel.bytes.length });
      response.end(wheel.bytes);
      return;
    }
    response.writeHead(404).end();
  });
  recorded(server, requests);
  const { url, port } = await listen(server, options.host ?? '127.0.0.1', options.port);
  return {
    url,
    port,
    indexUrl: `${url}/simple/`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * An HTTP server that answers 200 with `body` (or the bytes `size` asks for with `?bytes=N`) and
 * records every request and connection: as a destination a policy allows, or as a canary that
 * must never be reached.
 */
export async function startRecordingServer(
  options: { host?: string; port?: number; body?: string } = {},
): Promise<RecordingServer & { connections: string[] }> {
  const requests: RecordingServer['requests'] = [];
  const connections: string[] = [];
  const server = createServer((request, response) => {
    const bytes = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('bytes') ?? -1);
    if (bytes >= 0) {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': bytes });
      response.end(Buffer.alloc(bytes, 0x61));
      return;
    }
    response.writeHead(200, { 'Content-Type': 'text/plain' });
    response.end(options.body ?? 'canary');
  });
  server.on('connection', (socket) => connections.push(socket.remoteAddress ?? ''));
  recorded(server, requests);
  const { url, port } = await listen(server, options.host ?? '127.0.0.1', options.port);
  return {
    url,
    port,
    requests,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A server that must never be reached: it answers 200 "canary" and records who came. */
export function startCanary(options: { host?: string; port?: number } = {}) {
  return startRecordingServer({ ...options, body: 'canary' });
}
