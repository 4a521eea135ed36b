import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import { createTestDatabaseTarget, type TestDatabaseTarget, testPostgresUrl } from './support/database.js';
import { readJson } from './support/json.js';
import { runMordn, spawnMordn } from './support/process.js';
import { runMordnToExit } from './support/run-to-exit.js';

let target: TestDatabaseTarget;

beforeEach(async () => {
  target = await createTestDatabaseTarget();
});
afterEach(() => target.destroy());

/** Each test starts the CLI through tsx once or twice: seconds each on a busy 2-core machine. */
const PROCESS_TIMEOUT = { timeout: 90_000 };

describe('mordn init', PROCESS_TIMEOUT, () => {
  it('creates a tenant, agent, published config and key whose first request authenticates', async () => {
    const init = await runMordn(['init', '--json'], target.environment);
    expect(init.code).toBe(0);
    const result = JSON.parse(init.stdout);
    expect(result).toMatchObject({
      status: 'created',
      tenant: { id: expect.stringMatching(/^ten_/) },
      agent: { id: expect.stringMatching(/^agt_/) },
      key: { key: expect.stringMatching(/^mordn_/), permissions: ['read', 'write'] },
    });

    const service = spawnMordn(['serve'], { ...target.environment, PORT: '0' });
    try {
      const listening = await service.waitForLog((line) => line.msg === 'mordn listening');
      const response = await fetch(`${listening.url}/v1/me`, {
        headers: { Authorization: `Bearer ${result.key.key}`, 'X-Chat-User': 'user-123' },
      });
      expect(response.status).toBe(200);
      expect(await readJson(response)).toEqual({
        tenantId: result.tenant.id,
        agentId: result.agent.id,
        userId: 'user-123',
        permissions: ['read', 'write'],
      });
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    expect(service.stdout.join('\n')).not.toContain(result.key.key);

    const database = await target.open();
    try {
      const config = await database.db.selectFrom('agent_configs').selectAll().executeTakeFirstOrThrow();
      expect(JSON.parse(config.published ?? 'null')).toMatchObject({ schemaVersion: 1 });
    } finally {
      await database.close();
    }
  });

  it('prints the key and a ready-to-run curl command', async () => {
    const init = await runMordn(['init'], { ...target.environment, PORT: '9123' });
    expect(init.code).toBe(0);
    const key = /key {5}(mordn_\S+)/.exec(init.stdout)?.[1];
    expect(key).toBeDefined();
    expect(init.stdout).toContain('curl -s http://127.0.0.1:9123/v1/me');
    expect(init.stdout).toContain(`-H 'Authorization: Bearer ${key}'`);
    expect(init.stdout).toContain("-H 'X-Chat-User: user-123'");
  });

  it('says that the admin API and the console need MORDN_ADMIN_TOKEN, and where the console is', async () => {
    const without = await runMordn(['init'], { ...target.environment, PORT: '9123' });
    expect(without.code).toBe(0);
    expect(without.stdout).toContain('The admin API (/v1/admin/*) and the web console need MORDN_ADMIN_TOKEN');
    expect(without.stdout).toContain('which is not set here, so both are off.');
    expect(without.stdout).toContain('  export MORDN_ADMIN_TOKEN="$(openssl rand -hex 32)"');
    expect(without.stdout).toContain(
      'Then open http://127.0.0.1:9123/console/ and sign in with the value of MORDN_ADMIN_TOKEN.',
    );
    // The curl command stays last, to be copied whole.
    expect(without.stdout.trimEnd().endsWith("-H 'X-Chat-User: user-123'")).toBe(true);

    const token = 'init-admin-token-0123456789abcdef';
    const again = await runMordn(['init'], {
      ...target.environment,
      PORT: '9123',
      MORDN_PUBLIC_URL: 'https://mordn.example.net',
      MORDN_ADMIN_TOKEN: token,
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing was created');
    expect(again.stdout).toContain('MORDN_ADMIN_TOKEN; it is set here.');
    expect(again.stdout).toContain('open https://mordn.example.net/console/ and sign in with its value.');
    expect(again.stdout).not.toContain(token);
  });

  it('changes nothing on a database that already has tenants', async () => {
    expect((await runMordn(['init', '--json'], target.environment)).code).toBe(0);
    const second = await runMordn(['init', '--json'], target.environment);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ status: 'exists', tenants: 1 });
    const database = await target.open();
    try {
      expect(await database.db.selectFrom('api_keys').selectAll().execute()).toHaveLength(1);
    } finally {
      await database.close();
    }
  });
});

describe('mordn serve start-up log', PROCESS_TIMEOUT, () => {
  /** The start-up report's lines (model, sandboxes, egress, console) of `mordn serve` in `environment`. */
  async function startupReport(environment: Record<string, string>): Promise<Array<Record<string, unknown>>> {
    const service = spawnMordn(['serve'], { ...target.environment, PORT: '0', ...environment });
    try {
      await service.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('admin API and console'));
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    return service.stdout
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      })
      .filter((line) => /^(model|sandboxes|sandbox egress|admin API and console) (on|off): /.test(String(line.msg)));
  }

  it('says whether a model, sandboxes (and which backend), egress and the console are on, and why not', async () => {
    const off = await startupReport({});
    expect(off.map((line) => line.msg)).toEqual([
      'model off: MORDN_MODEL is not set, so POST /v1/chat answers 503 MODEL_NOT_CONFIGURED',
      'sandboxes off: MORDN_SANDBOX_ENABLED is not true, so no agent gets sandbox tools',
      'sandbox egress off: sandboxes are off',
      'admin API and console off: MORDN_ADMIN_TOKEN is not set, so /v1/admin/* and the web console at /console/ do not exist',
    ]);
    expect(off.map((line) => line.on)).toEqual([false, false, false, false]);

    const token = 'startup-admin-token-0123456789abcdef';
    const on = await startupReport({
      MORDN_MODEL: 'openai-compatible:scripted-1',
      MORDN_MODEL_BASE_URL: 'http://127.0.0.1:9/v1',
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'bwrap',
      MORDN_SANDBOX_EGRESS: 'on',
      MORDN_ADMIN_TOKEN: token,
    });
    expect(on.map((line) => line.on)).toEqual([true, true, true, true]);
    expect(on[0]).toMatchObject({
      msg: 'model on: openai-compatible:scripted-1 (MORDN_MODEL)',
      model: 'openai-compatible:scripted-1',
    });
    expect(on[1]).toMatchObject({ backend: 'bwrap' });
    expect(String(on[1]?.msg)).toMatch(/^sandboxes on: bwrap backend \(MORDN_SANDBOX_BACKEND\) for every tenant/);
    expect(on[2]).toMatchObject({ ceiling: { ports: [80, 443], tenants: 'all', maxConnections: 16 } });
    expect(String(on[2]?.msg)).toMatch(
      /^sandbox egress on: ceiling for every tenant: ports 80,443, package index https:\/\/pypi\.org\/simple\//,
    );
    expect(String(on[3]?.msg)).toMatch(
      /^admin API and console on: open http:\/\/127\.0\.0\.1:\d+\/console\/ and sign in with the value of MORDN_ADMIN_TOKEN/,
    );
    expect(JSON.stringify(on)).not.toContain(token);
  });
});

describe('configuration errors', PROCESS_TIMEOUT, () => {
  it('stop start-up with a message naming the variable', async () => {
    const result = await runMordn(['serve'], { ...target.environment, PORT: 'eighty', MORDN_STORAGE: 'gcs' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PORT: must be an integer');
    expect(result.stderr).toContain('MORDN_STORAGE: must be one of fs, s3');
  });

  it('are reported together, field and cross-field problems alike, before anything is touched', async () => {
    const result = await runMordn(['init'], {
      ...target.environment,
      PORT: 'eighty',
      MORDN_ADMIN_TOKEN: 'short',
      MORDN_MODEL: 'gpt-4o',
      MORDN_SANDBOX_TOOLS: 'sandbox_exec,rm_rf',
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toBe('Invalid configuration:');
    expect(
      lines
        .slice(1)
        .map((line) => line.trim().split(':')[0])
        .sort(),
    ).toEqual(['MORDN_ADMIN_TOKEN', 'MORDN_MODEL', 'MORDN_SANDBOX_TOOLS', 'PORT']);
    expect(await targetIsUntouched()).toBe(true);
  });
});

/** Whether nothing was written: an empty data directory and, on PostgreSQL, a schema without tables. */
async function targetIsUntouched(): Promise<boolean> {
  if ((await readdir(target.dataDir)).length > 0) return false;
  if (target.dialect !== 'postgres') return true;
  const client = new pg.Client({ connectionString: testPostgresUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(
      'select count(*)::int as tables from information_schema.tables where table_schema = $1',
      [target.schema],
    );
    return rows[0].tables === 0;
  } finally {
    await client.end();
  }
}

describe('command line', PROCESS_TIMEOUT, () => {
  it.each([
    ['init', 'Usage: mordn init [--json]'],
    ['serve', 'Usage: mordn serve'],
    ['migrate', 'Usage: mordn migrate'],
  ])('%s --help prints its help and changes nothing', async (command, usage) => {
    const result = await runMordnToExit([command, '--help'], { ...target.environment, PORT: '0' });
    expect(result.listened).toBe(false);
    expect(result.code).toBe(0);
    expect(result.stdout.startsWith(usage)).toBe(true);
    expect(result.stdout).not.toContain('mordn_');
    expect(await targetIsUntouched()).toBe(true);
  });

  it.each([
    [['init', '--jsno'], 'Unknown option "--jsno" for mordn init.'],
    [['serve', '--port', '9000'], 'Unknown option "--port" for mordn serve.'],
  ])('%o is refused, naming the option, and changes nothing', async (args, message) => {
    const result = await runMordnToExit(args, { ...target.environment, PORT: '0' });
    expect(result.listened).toBe(false);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
    expect(await targetIsUntouched()).toBe(true);
  });

  it('--version prints the package version', async () => {
    const manifest = JSON.parse(await readFile(path.join(packageRoot(), 'package.json'), 'utf8'));
    const result = await runMordn(['--version'], target.environment);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(manifest.version);
    expect(await targetIsUntouched()).toBe(true);
  });
});
