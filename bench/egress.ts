import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, startBenchServer } from './support.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
/** The origin's own loopback address: not one NO_PROXY names, so sandboxed clients use the proxy. */
const ORIGIN_HOST = '127.0.0.2';

/**
 * An origin paced at `bytesPerSecond` for `/bytes?n=…`, and a tiny answer for `/small`, on
 * 127.0.0.2: what the proxy relays, and what a client on the host downloads directly.
 */
async function startOrigin(bytesPerSecond: number): Promise<{ port: number; server: Server }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://origin');
    if (url.pathname === '/small') {
      response.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
      response.end('ok');
      return;
    }
    const total = Number(url.searchParams.get('n') ?? 0);
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': total });
    const started = performance.now();
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const due = started + (sent * 1000) / bytesPerSecond;
        const wait = due - performance.now();
        if (wait > 1) {
          setTimeout(pump, wait);
          return;
        }
        const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
        sent += piece.length;
        if (!response.write(piece)) {
          response.once('drain', pump);
          return;
        }
      }
      response.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, ORIGIN_HOST, resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

/**
 * Python that downloads `n` bytes from the origin (with urllib, through whatever proxy its
 * environment names) and, over one keep-alive connection, 200 small requests, printing JSON of
 * the download's seconds and each small request's milliseconds. Run on the host it is the
 * direct baseline; run in a sandbox, the same client through the policy proxy.
 */
function clientScript(port: number, bytes: number, mode: 'direct' | 'absolute' | 'connect'): string {
  return `import http.client, json, os, time, urllib.request
origin = "${ORIGIN_HOST}:${port}"
mode = "${mode}"
proxy = os.environ.get("HTTP_PROXY", "").replace("http://", "")
def connection():
    if mode == "direct":
        return http.client.HTTPConnection(origin, timeout=60)
    host, port = proxy.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    if mode == "connect":
        conn.set_tunnel(origin)
    return conn
target = lambda path: path if mode != "absolute" else "http://" + origin + path
conn = connection()
started = time.monotonic()
conn.request("GET", target("/bytes?n=${bytes}"))
answer = conn.getresponse()
received = 0
while True:
    chunk = answer.read(1 << 20)
    if not chunk:
        break
    received += len(chunk)
download = time.monotonic() - started
assert received == ${bytes}, received
small = []
for _ in range(220):
    started = time.monotonic()
    conn.request("GET", target("/small"))
    body = conn.getresponse().read()
    small.append((time.monotonic() - started) * 1000)
    assert body == b"ok"
print(json.dumps({"download": download, "small": small[20:]}))`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/**
 * Sandbox egress through the policy proxy against the same client talking to the origin
 * directly, in one run: a 50 MiB download from an origin paced at 100 MiB/s (target ≥ 0.8×
 * direct) and 200 small requests over one keep-alive client (target ≤ 3 ms added at p50), both
 * as absolute-form `http://` requests (each one checked by the policy) and inside one CONNECT
 * tunnel (what HTTPS takes).
 */
export async function benchEgress(options: { megabytes?: number } = {}) {
  const bytes = (options.megabytes ?? 50) * MiB;
  const origin = await startOrigin(100 * MiB);
  const server = await startBenchServer('mordn', {
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    MORDN_SANDBOX_ENABLED: 'true',
    MORDN_SANDBOX_EGRESS: 'on',
    MORDN_SANDBOX_PACKAGE_INDEX_URL: `http://${ORIGIN_HOST}:${origin.port}/simple/`,
    MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: `${ORIGIN_HOST}/32`,
    MORDN_SANDBOX_EGRESS_PORTS: String(origin.port),
    MORDN_SANDBOX_CALLS_PER_MINUTE: '10000',
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const admin = async (method: string, pathname: string, body?: unknown) =>
      (await (
        await fetch(`${base}${pathname}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      ).json()) as Record<string, string>;
    const tenant = await admin('POST', '/v1/admin/tenants', { name: 'bench' });
    const agent = await admin('POST', `/v1/admin/tenants/${tenant.id}/agents`, { name: 'bench' });
    await admin('PUT', `/v1/admin/agents/${agent.id}/config`, {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true, network: { mode: 'packages' } } },
    });
    await admin('POST', `/v1/admin/agents/${agent.id}/config/publish`);
    const key = (await admin('POST', `/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] })).key;

    const inSandbox = async (script: string) => {
      const call = (name: string, args: Record<string, unknown>) =>
        fetch(`${base}/v1/sandbox/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'x-chat-user': 'bench',
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
        }).then(async (response) => {
          const body = (await response.json()) as { result: { content: Array<{ text: string }> } };
          return JSON.parse(body.result.content[0]?.text ?? '{}') as Record<string, unknown>;
        });
      await call('sandbox_write_file', { path: 'egress-bench.py', content: script });
      const result = await call('sandbox_exec', { command: 'python3 egress-bench.py', timeoutSeconds: 120 });
      if (result.exitCode !== 0) throw new Error(`the sandboxed client failed: ${JSON.stringify(result)}`);
      return JSON.parse(String(result.stdout)) as { download: number; small: number[] };
    };
    const onHost = async (script: string) => {
      const { stdout } = await run('python3', ['-c', script], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
      return JSON.parse(stdout) as { download: number; small: number[] };
    };

    // Warm-up: the workspace exists, its supervisor runs and both of the service's paths have
    // carried a few MiB (as in a service that has been up a while) before anything is timed.
    await inSandbox(clientScript(origin.port, 8 * MiB, 'absolute'));
    await inSandbox(clientScript(origin.port, 8 * MiB, 'connect'));
    const direct = await onHost(clientScript(origin.port, bytes, 'direct'));
    const absolute = await inSandbox(clientScript(origin.port, bytes, 'absolute'));
    const tunnel = await inSandbox(clientScript(origin.port, bytes, 'connect'));
    const directAgain = await onHost(clientScript(origin.port, bytes, 'direct'));
    const directSeconds = Math.min(direct.download, directAgain.download);
    const directSmall = median([...direct.small, ...directAgain.small]);
    const rows = [
      { path: 'direct (host, no proxy)', result: { download: directSeconds, small: [directSmall] } },
      { path: 'through the proxy, absolute-form http://', result: absolute },
      { path: 'through the proxy, one CONNECT tunnel', result: tunnel },
    ];
    console.log(
      `\nEgress: ${bytes / MiB} MiB from an origin paced at 100 MiB/s, and 200 small requests over one keep-alive connection (bwrap, SQLite)`,
    );
    console.table(
      rows.map(({ path, result }) => {
        const throughput = bytes / MiB / result.download;
        const ratio = directSeconds / result.download;
        const added = median(result.small) - directSmall;
        return {
          path,
          'download MiB/s': throughput.toFixed(1),
          'vs direct': path.startsWith('direct')
            ? ''
            : `${ratio.toFixed(2)}× (≥ 0.8×) ${ratio >= 0.8 ? 'MET' : 'NOT MET'}`,
          'small p50 ms': median(result.small).toFixed(2),
          'added p50 ms': path.startsWith('direct')
            ? ''
            : `${added.toFixed(2)} (≤ 3) ${added <= 3 ? 'MET' : 'NOT MET'}`,
        };
      }),
    );
    return {
      absoluteRatio: directSeconds / absolute.download,
      connectRatio: directSeconds / tunnel.download,
      absoluteAddedMs: median(absolute.small) - directSmall,
      connectAddedMs: median(tunnel.small) - directSmall,
    };
  } finally {
    await server.stop();
    origin.server.close();
  }
}
