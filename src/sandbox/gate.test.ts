import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { evaluateSandboxGate, type SandboxCaller } from './gate.js';

const operator = (environment: Record<string, string> = {}) =>
  loadConfig({ MORDN_SANDBOX_ENABLED: 'true', ...environment }).sandbox;
const caller = (overrides: Partial<SandboxCaller> = {}): SandboxCaller => ({
  publishedConfig: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
  tenantId: 'ten_a',
  userId: 'alice',
  ...overrides,
});

describe('evaluateSandboxGate', () => {
  it('opens when every leg holds, asking the backend last', async () => {
    let asked = 0;
    const ready = async () => {
      asked += 1;
      return true;
    };
    expect(await evaluateSandboxGate({ operator: operator(), isBackendReady: ready }, caller())).toEqual({
      enabled: true,
      available: true,
    });
    expect(asked).toBe(1);
  });

  it.each([
    ['published-config', {}, { publishedConfig: { schemaVersion: 1 as const } }, false],
    ['integration-off', {}, { integrationOff: true }, true],
    ['operator-switch', { MORDN_SANDBOX_ENABLED: 'false' }, {}, true],
    ['tenant-not-allowed', { MORDN_SANDBOX_TENANTS: 'ten_b' }, {}, true],
    ['anonymous-user', {}, { userId: 'Anon:visitor' }, true],
  ])('names %s as the closed leg, without asking the backend', async (leg, environment, overrides, enabled) => {
    let asked = 0;
    const result = await evaluateSandboxGate(
      {
        operator: operator(environment),
        isBackendReady: async () => {
          asked += 1;
          return true;
        },
      },
      caller(overrides),
    );
    expect(result).toEqual({ enabled, available: false, closedBy: leg });
    expect(asked).toBe(0);
  });

  it('closes on a backend that is missing, not ready, or whose check throws — never failing the caller', async () => {
    expect(await evaluateSandboxGate({ operator: operator() }, caller())).toMatchObject({
      available: false,
      closedBy: 'backend-not-ready',
    });
    const notReady = await evaluateSandboxGate({ operator: operator(), isBackendReady: async () => false }, caller());
    expect(notReady).toEqual({ enabled: true, available: false, closedBy: 'backend-not-ready' });
    const failing = await evaluateSandboxGate(
      {
        operator: operator(),
        isBackendReady: async () => {
          throw new Error('probe crashed');
        },
      },
      caller(),
    );
    expect(failing).toEqual({ enabled: true, available: false, closedBy: 'backend-check-failed' });
  });
});
