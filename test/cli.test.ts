import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabaseTarget, type TestDatabaseTarget } from './support/database.js';
import { readJson } from './support/json.js';
import { runMordn, spawnMordn } from './support/process.js';

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

describe('configuration errors', PROCESS_TIMEOUT, () => {
  it('stop start-up with a message naming the variable', async () => {
    const result = await runMordn(['serve'], { ...target.environment, PORT: 'eighty', MORDN_STORAGE: 'gcs' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PORT: must be an integer');
    expect(result.stderr).toContain('MORDN_STORAGE: must be one of fs, s3');
  });
});
