import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { AgentConfig } from '../../src/agents/config-schema.js';
import type { ResolveAll } from '../../src/sandbox/egress/destinations.js';
import { callTool } from './mcp.js';

/** A published config with sandboxes on and `network` as the agent's policy. */
export function networkConfig(network: unknown): AgentConfig {
  return { schemaVersion: 1, runtime: { sandbox: { enabled: true, network } } } as AgentConfig;
}

/**
 * A resolver for the egress proxy mapping test names to this machine's addresses: a name maps to
 * one or more addresses, or to a function that answers each lookup in turn (rebinding).
 */
export function testResolver(names: Record<string, string[] | (() => string[])>): ResolveAll & { lookups: string[] } {
  const lookups: string[] = [];
  const resolve = async (name: string) => {
    lookups.push(name);
    const entry = names[name];
    const addresses = typeof entry === 'function' ? entry() : entry;
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { lookups });
}

/**
 * Python run inside the sandbox: the script goes in as a file (no shell quoting), runs with the
 * command's environment, and prints what the test reads.
 */
export async function runPython(client: Client, script: string, timeoutSeconds = 60) {
  const name = `egress-${Math.random().toString(36).slice(2)}.py`;
  const written = await callTool(client, 'sandbox_write_file', { path: name, content: script });
  if (written.isError) throw new Error(`could not write the script: ${JSON.stringify(written.value)}`);
  const result = await callTool(client, 'sandbox_exec', { command: `python3 ${name}; rm -f ${name}`, timeoutSeconds });
  return result.value as { exitCode: number; stdout: string; stderr: string; message?: string };
}

/**
 * Python that speaks raw HTTP to the workspace's way out (the supervisor's listener), found from
 * the command's HTTP_PROXY, or, without one, from the sandbox's own listening sockets: whatever a
 * program that ignores the variables could find too. `send(request)` returns the status line.
 */
export const RAW_PROXY_PY = `
import os, socket
def proxy_port():
    proxy = os.environ.get("HTTP_PROXY")
    if proxy:
        return int(proxy.rsplit(":", 1)[1])
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local, state = fields[1], fields[3]
            if state == "0A" and local.startswith("0100007F:"):
                return int(local.split(":")[1], 16)
    raise SystemExit("no listener")
def send(request, read_all=False):
    s = socket.create_connection(("127.0.0.1", proxy_port()), timeout=10)
    s.sendall(request.encode("latin-1"))
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
        if not read_all and b"\\r\\n\\r\\n" in data and not data.startswith(b"HTTP/1.1 200 Connection"):
            break
        if data.startswith(b"HTTP/1.1 200 Connection") and not read_all:
            break
    s.close()
    return data.decode("latin-1")
def status(request):
    return send(request).split("\\r\\n", 1)[0]
`;
