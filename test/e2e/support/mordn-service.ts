import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Json, readJson } from '../../support/json.js';
import { type MordnProcess, spawnMordn } from '../../support/process.js';
import { removeWorkspacesRoot } from '../../support/workspace-roots.js';
import { freePort } from './free-port.js';

const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

export interface AgentRequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface MordnService {
  /** `http://127.0.0.1:<port>`: the API and the origin of its signed download URLs. */
  url: string;
  /** The service's MORDN_DATA_DIR (its SQLite database is `mordn.db` there). */
  dataDir: string;
  process: MordnProcess;
  /** A read+write key of an agent whose published config enables managed sandboxes. */
  key: string;
  /** Sends an agent request as `userId`. */
  agentFetch(userId: string, route: string, init?: AgentRequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * `mordn serve` from the CLI on a free port, with its own data directory (SQLite, local storage,
 * bubblewrap workspaces) and the given extra environment; then a tenant, an agent with sandboxes
 * published and a key, made through the admin API as an operator would.
 */
export async function startMordnService(environment: Record<string, string>): Promise<MordnService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mordn-e2e-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const running = spawnMordn(['serve'], {
    PORT: String(port),
    MORDN_DATA_DIR: dataDir,
    MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    ...environment,
  });
  const stop = async () => {
    if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGTERM');
    await running.exited;
    await removeWorkspacesRoot(dataDir);
  };
  try {
    await running.waitForLog((line) => line.msg === 'mordn listening', 60_000);
    const admin = async (route: string, body?: unknown, method = 'POST'): Promise<Json> => {
      const response = await fetch(`${url}${route}`, {
        method,
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${await response.text()}`);
      return readJson(response);
    };
    const tenant = await admin('/v1/admin/tenants', { name: 'Example tenant' });
    const agent = await admin(`/v1/admin/tenants/${tenant.id}/agents`, { name: 'Example agent' });
    await admin(
      `/v1/admin/agents/${agent.id}/config`,
      {
        schemaVersion: 1,
        instructions: 'Work on the user’s files in the sandbox and publish what you make.',
        runtime: { sandbox: { enabled: true } },
      },
      'PUT',
    );
    await admin(`/v1/admin/agents/${agent.id}/config/publish`);
    const { key } = await admin(`/v1/admin/agents/${agent.id}/keys`, { permissions: ['read', 'write'] });
    return {
      url,
      dataDir,
      process: running,
      key,
      agentFetch: (userId, route, init = {}) =>
        fetch(`${url}${route}`, {
          ...init,
          headers: { Authorization: `Bearer ${key}`, 'X-Chat-User': userId, ...(init.headers ?? {}) },
        }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
