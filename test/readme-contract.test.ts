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

/**
 * The JSON-RPC answer with this id in the output of several curl calls (printed without
 * newlines between them): the one parseable object that starts at a `{"result":` and ends there.
 */
function jsonRpcAnswer(output: string, id: number): { result?: Record<string, unknown> } {
  const ending = `"id":${id}}`;
  const end = output.indexOf(ending);
  if (end < 0) return {};
  const candidate = output.slice(0, end + ending.length);
  for (
    let start = candidate.lastIndexOf('{"result":');
    start >= 0;
    start = candidate.lastIndexOf('{"result":', start - 1)
  ) {
    try {
      return JSON.parse(candidate.slice(start));
    } catch {
      // Not this one: an earlier answer holds it.
    }
  }
  return {};
}

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

    const tokens = shellBlocks(section(README, '#### Per-user MCP tokens'));
    expect(tokens[0]).toContain('$BASE/v1/sandbox/tokens');

    const finalCheck = [
      'echo',
      `echo "KEY_STATUS=$(curl -s -o /dev/null -w '%{http_code}' $BASE/v1/me -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123')"`,
    ].join('\n');
    const script = atService([...requests, sandboxRequests, ...tokens, finalCheck].join('\n'));
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

    // The 2026-07-28 call of the same section.
    const modern = jsonRpcAnswer(stdout, 2);
    expect(modern.result).toMatchObject({ resultType: 'complete', structuredContent: { stdout: 'modern\n' } });

    // The token block: minted, used alone in both eras, revoked, then refused.
    expect(stdout).toMatch(/"token":"mordn_mcp_[A-Za-z0-9_-]{43}"/);
    for (const id of [11, 12]) {
      const answer = jsonRpcAnswer(stdout, id);
      expect(answer.result?.structuredContent, `token call ${id}`).toMatchObject({ exitCode: 0 });
    }
    // Revoked (both DELETEs print nothing), the token is refused right after its last answer.
    expect(stdout).toMatch(/"id":12\}401$/m);
    expect(stdout).toContain('"resource_name":"Mordn sandbox MCP"');
  }, 120_000);
});
