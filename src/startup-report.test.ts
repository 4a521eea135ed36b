import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { describeStartup } from './startup-report.js';

const CONSOLE_URL = 'http://127.0.0.1:8787/console/';
const ADMIN_TOKEN = 'startup-report-admin-token-0123';

function report(environment: Record<string, string>) {
  return describeStartup(loadConfig(environment), { consoleUrl: CONSOLE_URL });
}

describe('describeStartup', () => {
  it('says what is off and which variable turns it on', () => {
    expect(report({}).map((line) => line.message)).toEqual([
      'model off: MORDN_MODEL is not set, so POST /v1/chat answers 503 MODEL_NOT_CONFIGURED',
      'sandboxes off: MORDN_SANDBOX_ENABLED is not true, so no agent gets sandbox tools',
      'sandbox egress off: sandboxes are off',
      'admin API and console off: MORDN_ADMIN_TOKEN is not set, so /v1/admin/* and the web console at /console/ do not exist',
    ]);
    expect(report({ MORDN_SANDBOX_ENABLED: 'true' })[2]?.message).toBe(
      'sandbox egress off: MORDN_SANDBOX_EGRESS is not on, so sandboxed code reaches no network',
    );
  });

  it('names the model, the backend, the egress ceiling and where the console is when they are on', () => {
    const lines = report({
      MORDN_MODEL: 'openai-compatible:llama3',
      MORDN_MODEL_BASE_URL: 'http://127.0.0.1:11434/v1',
      MORDN_MODEL_API_KEY: 'model-api-key-not-to-be-logged',
      MORDN_SANDBOX_ENABLED: 'true',
      MORDN_SANDBOX_BACKEND: 'docker',
      MORDN_SANDBOX_TENANTS: 'ten_a,ten_b',
      MORDN_SANDBOX_EGRESS: 'on',
      MORDN_SANDBOX_EGRESS_PORTS: '443',
      MORDN_SANDBOX_PACKAGE_INDEX_URL: 'https://pypi.example.net/simple/',
      MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '10.1.2.3/32',
      MORDN_ADMIN_TOKEN: ADMIN_TOKEN,
    });
    expect(lines.map((line) => [line.subject, line.on])).toEqual([
      ['model', true],
      ['sandboxes', true],
      ['sandbox egress', true],
      ['admin API and console', true],
    ]);
    const [model, sandboxes, egress, console] = lines;
    expect(model?.message).toBe('model on: openai-compatible:llama3 (MORDN_MODEL)');
    expect(sandboxes?.message).toMatch(
      /^sandboxes on: docker backend \(MORDN_SANDBOX_BACKEND\) for 2 tenants \(listed\);/,
    );
    expect(egress?.message).toMatch(
      /^sandbox egress on: ceiling for every tenant: ports 443, package index https:\/\/pypi\.example\.net\/simple\/, per workspace 16 connections, 1024 MiB a day, 100 MiB\/s, 1 private range reachable;/,
    );
    expect(egress?.fields).toMatchObject({ ceiling: { ports: [443], maxConnections: 16, privateRanges: 1 } });
    expect(console?.message).toBe(
      `admin API and console on: open ${CONSOLE_URL} and sign in with the value of MORDN_ADMIN_TOKEN (the admin API takes it as a bearer token)`,
    );
    // Facts, never secrets: no token, no model key, no private range.
    const text = JSON.stringify(lines);
    for (const secret of [ADMIN_TOKEN, 'model-api-key-not-to-be-logged', '10.1.2.3'])
      expect(text).not.toContain(secret);
  });
});
