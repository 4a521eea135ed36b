import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/errors.js';
import { describeInitResult, initialize } from '../src/init.js';
import {
  errorTable,
  hasCommand,
  namedCodes,
  readme,
  runBash,
  section,
  shellBlocks,
  unionMembers,
} from './support/readme.js';
import { startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';

/**
 * The README says what a newcomer types and what they get back. These tests hold it to that: the
 * shell blocks of the quickstart, the admin walkthrough and the managed-sandbox section run as
 * written (only the address is the test service's), and the error tables list exactly the codes
 * the code can return.
 */

const README = readme();
const README_ORIGIN = 'http://127.0.0.1:8787';
const MISSING_TOOLS = ['bash', 'curl', 'jq'].filter((command) => !hasCommand(command));
if (MISSING_TOOLS.length > 0) {
  console.warn(`README shell blocks not run: ${MISSING_TOOLS.join(', ')} not found on the PATH.`);
}

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
});
afterAll(() => service.close());

/** README shell text pointed at the test service. */
const atService = (script: string) => script.replaceAll(README_ORIGIN, service.url);

describe('README error tables', () => {
  it('list every HTTP error code with the status the service answers it with, and no other', () => {
    const documented = errorTable(section(README, '## Calling agent routes'));
    const expected = new Map(Object.entries(ERROR_STATUS));
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(expected));
  });

  it('list every sandbox tool error code, and no other', () => {
    const sandboxes = section(README, '### Managed sandboxes');
    const bullet = /^- Tool failures are [\s\S]*?(?=\n- )/m.exec(sandboxes)?.[0] ?? '';
    const documented = new Set(namedCodes(bullet));
    const toolCodes = new Set([
      ...unionMembers('src/sandbox/tools/tool-context.ts', 'ToolErrorCode'),
      ...unionMembers('src/sandbox/backend.ts', 'WorkspaceFileErrorCode'),
    ]);
    expect(toolCodes.size).toBeGreaterThan(10);
    expect([...documented].sort()).toEqual([...toolCodes].sort());
  });
});

describe.skipIf(MISSING_TOOLS.length > 0)('README shell blocks, run as written', () => {
  it("quickstart: `mordn init`'s printed curl line answers as the README shows", async () => {
    const printed = describeInitResult(await initialize(service.database.db), README_ORIGIN);
    const curl = printed.slice(printed.indexOf('  curl -s'));
    const { stdout } = await runBash(atService(curl), {});
    const shown = /# (\{"tenantId":.*\})$/m.exec(section(README, '## Quickstart'))?.[1] ?? '';
    expect(Object.keys(JSON.parse(stdout))).toEqual(Object.keys(JSON.parse(shown.replaceAll('…', ''))));
    expect(JSON.parse(stdout)).toMatchObject({ userId: 'user-123', permissions: ['read', 'write'] });
  });

  it('admin walkthrough, then the managed-sandbox section: the key stays usable and sandbox_exec runs', async () => {
    const walkthrough = shellBlocks(section(README, '## Admin walkthrough'));
    const [start, ...requests] = walkthrough;
    // The service is already running with this token; the block must say how to start it so.
    expect(start).toMatch(/^export MORDN_ADMIN_TOKEN=\$\(openssl rand -hex 24\)$/m);
    expect(start).toMatch(/^npm start$/m);

    const sandboxes = shellBlocks(section(README, '### Managed sandboxes'));
    expect(sandboxes[0]).toBe('MORDN_SANDBOX_ENABLED=true npm start\n');
    const sandboxRequests = sandboxes[1] ?? '';
    expect(sandboxRequests).toContain('"method":"tools/call"');

    const finalCheck = [
      'echo',
      `echo "KEY_STATUS=$(curl -s -o /dev/null -w '%{http_code}' $BASE/v1/me -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123')"`,
    ].join('\n');
    const script = atService([...requests, sandboxRequests, finalCheck].join('\n'));
    const { stdout } = await runBash(script, { MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN }, 90_000);

    // The revocation example revokes a key of its own; the walkthrough's key still works at the end.
    expect(stdout).toContain('"code":"INVALID_API_KEY"');
    expect(stdout).toMatch(/^KEY_STATUS=200$/m);
    expect(stdout).toContain('"userId":"user-123","permissions":["read","write"]');
    expect(stdout).toContain('{"enabled":true,"available":true}');

    const answer = /\{"result":.*"id":1\}/.exec(stdout)?.[0];
    expect(answer, stdout).toBeDefined();
    const exec = JSON.parse(answer as string).result.structuredContent;
    expect(exec).toMatchObject({ exitCode: 0, timedOut: false });
    expect(exec.stdout).toMatch(/^1000\nPython 3\.[\s\S]*no network\n$/);
  }, 120_000);
});
