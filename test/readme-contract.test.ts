import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/errors.js';
import { describeInitResult, initialize } from '../src/init.js';
import { totalsPerRegionTurn } from './support/docs-chat-model.js';
import type { Json } from './support/json.js';
import {
  backtickedNames,
  errorTable,
  hasCommand,
  namedCodes,
  type PageShellBlock,
  pageShellBlocks,
  readingOrder,
  readPage,
  readSource,
  runBash,
  section,
  tableRows,
  unionMembers,
} from './support/readme.js';
import { type ScriptedModelServer, startScriptedModelServer } from './support/scripted-model-server.js';
import { startTestService, TEST_ADMIN_TOKEN, type TestService } from './support/service.js';
import { pngBytes } from './support/upload-samples.js';

/**
 * The README and the docs say what a newcomer types and what they get back. These tests hold them
 * to that: the error, configuration and metrics tables list exactly what the code has, and every
 * `sh` block is accounted for in BLOCKS below. The blocks marked `run` run as written (only the
 * address is the test service's) as ONE shell session, in the order a reader meets them: the
 * README first, then the docs pages in the order the README's map lists them (`readingOrder`).
 * That is the order the pages themselves promise ("in the walkthrough's other shell", with
 * `BASE`, `KEY`… from earlier pages), so a page moved in the map, or a block moved between
 * pages, is run where a reader would now meet it. The test service stands in for the blocks that
 * start the service: it has the admin token, sandboxes switched on and a scripted model.
 */

const README_ORIGIN = 'http://127.0.0.1:8787';
const MISSING_TOOLS = ['bash', 'curl', 'jq'].filter((command) => !hasCommand(command));
if (MISSING_TOOLS.length > 0) {
  console.warn(`Documentation shell blocks not run: ${MISSING_TOOLS.join(', ')} not found on the PATH.`);
}

/** What the contract does with one `sh` block. */
type Treatment =
  | { kind: 'run' }
  /** Starts the service with these settings; the test service, started so, stands in for it. */
  | { kind: 'start'; shape: RegExp }
  /** The first request `npm run init` prints; checked against what `mordn init` prints. */
  | { kind: 'init' }
  | { kind: 'not run'; why: string };

const run: Treatment = { kind: 'run' };
const start = (shape: RegExp): Treatment => ({ kind: 'start', shape });
const notRun = (why: string): Treatment => ({ kind: 'not run', why });

/** The first line of the Operate block of docs/admin.md (lists, rename, erase dry run, audit log). */
const OPERATE_FIRST_LINE = `curl -s "\${ADMIN[@]}" "$BASE/v1/admin/tenants?limit=20"`;

/** Every `sh` block of the README and the docs, in reading order, by page and first line. */
const BLOCKS: Array<[page: string, firstLine: string, treatment: Treatment]> = [
  [
    'README.md',
    '# 1. Install, create a first tenant + agent + key (printed once), and start on 127.0.0.1:8787',
    notRun('the two commands themselves: CI runs the second; the test service stands in for the first'),
  ],
  ['README.md', 'curl -s http://127.0.0.1:8787/v1/me \\', { kind: 'init' }],
  [
    'README.md',
    'export MORDN_ADMIN_TOKEN=$(openssl rand -hex 24)   # at least 16 characters',
    start(/^export MORDN_ADMIN_TOKEN=\$\(openssl rand -hex 24\)[\s\S]*^npm start$/m),
  ],
  [
    'docs/admin.md',
    'export MORDN_ADMIN_TOKEN=$(openssl rand -hex 24)',
    start(/^export MORDN_ADMIN_TOKEN=\$\(openssl rand -hex 24\)$[\s\S]*^npm start$/m),
  ],
  ['docs/admin.md', 'BASE=http://127.0.0.1:8787', run],
  ['docs/admin.md', `curl -s -X PUT "\${ADMIN[@]}" $BASE/v1/admin/agents/$AGENT/config -d '{`, run],
  ['docs/admin.md', `curl -s -X PUT "\${ADMIN[@]}" $BASE/v1/admin/agents/$AGENT/config \\`, run],
  ['docs/admin.md', `curl -s $BASE/v1/me -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123'`, run],
  [
    'docs/admin.md',
    `SPARE_JSON=$(curl -s "\${ADMIN[@]}" -d '{"permissions":["read"]}' $BASE/v1/admin/agents/$AGENT/keys)`,
    run,
  ],
  ['docs/admin.md', OPERATE_FIRST_LINE, run],
  ['docs/usage.md', `curl -s "\${ADMIN[@]}" "$BASE/v1/admin/usage?tenantId=$TENANT&groupBy=day"`, run],
  ['docs/usage.md', `curl -s -X PUT "\${ADMIN[@]}" $BASE/v1/admin/tenants/$TENANT/limits \\`, run],
  ['docs/uploads.md', `curl -s $BASE/v1/bootstrap -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123'`, run],
  [
    'docs/uploads.md',
    `curl -s "$BASE/v1/artifacts?limit=20" -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123'`,
    notRun('its storage paths are placeholders for a published file (the chat example makes one)'),
  ],
  ['docs/sandboxes.md', 'MORDN_SANDBOX_ENABLED=true npm start', start(/^MORDN_SANDBOX_ENABLED=true npm start$/m)],
  ['docs/sandboxes.md', `curl -s -X PUT "\${ADMIN[@]}" $BASE/v1/admin/agents/$AGENT/config \\`, run],
  [
    'docs/sandboxes.md',
    `MINTED=$(curl -s $BASE/v1/sandbox/tokens -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123' \\`,
    run,
  ],
  ['docs/sandboxes.md', 'curl -s $BASE/.well-known/oauth-protected-resource', run],
  [
    'docs/sandbox-runtime.md',
    'apt-get install --no-install-recommends python3 python3-seccomp python3-pandas python3-openpyxl \\',
    notRun("installs the host's packages (CI's .ci/run installs the same list)"),
  ],
  [
    'docs/sandbox-runtime.md',
    'cp sandbox-image/packages.txt sandbox-image/packages-office.txt',
    notRun('builds an image variant with LibreOffice'),
  ],
  [
    'docs/sandbox-runtime.md',
    'soffice -env:UserInstallation=file:///tmp/libreoffice --headless --convert-to pdf \\',
    notRun("runs inside a sandbox of that variant, not on the reader's shell"),
  ],
  [
    'docs/chat.md',
    'MORDN_SANDBOX_ENABLED=true MORDN_MODEL=openai:gpt-4.1 OPENAI_API_KEY=sk-… npm start',
    start(/^MORDN_SANDBOX_ENABLED=true MORDN_MODEL=\S+ \S+=\S+ npm start$/m),
  ],
  ['docs/chat.md', `AUTH=(-H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123')`, run],
  ['docs/chat.md', 'npm install mordn react react-dom @ai-sdk/react@3', notRun("installs into the reader's own app")],
  [
    'docs/operations.md',
    'findmnt -rn -o TARGET | grep "^$PWD/data/workspaces/" | sort -r | xargs -r umount',
    notRun("unmounts and deletes a stopped development service's data directory"),
  ],
  ['docs/operations.md', 'docker build -t mordn .', notRun('builds and runs the Docker image')],
  [
    'docs/operations.md',
    '# 1. Secrets, kept in .env beside docker-compose.yml (git-ignored, outside the build context).',
    notRun('deploys with Docker Compose'),
  ],
  [
    'docs/operations.md',
    '# 4. Enable for the tenant `init` printed only, and recreate the service.',
    notRun('reconfigures a Docker Compose deployment'),
  ],
  [
    'docs/capacity.md',
    'npm run bench -- load        # 200 concurrent chats, pure and mixed, beside the SDK floor (about 6 minutes)',
    notRun('benchmarks, minutes each'),
  ],
];

const ORDER = readingOrder();
const FOUND = pageShellBlocks(ORDER);
const treatmentOf = new Map(BLOCKS.map(([page, firstLine, treatment]) => [`${page}\n${firstLine}`, treatment]));
const blocksTreated = (kind: Treatment['kind']) =>
  FOUND.filter((block) => treatmentOf.get(`${block.page}\n${block.firstLine}`)?.kind === kind);

/** The block of a page that starts with `firstLine`. */
function block(page: string, firstLine: string): PageShellBlock {
  const found = FOUND.find((candidate) => candidate.page === page && candidate.firstLine === firstLine);
  if (!found) throw new Error(`${page} has no sh block starting with ${firstLine}`);
  return found;
}

/**
 * Every JSON object printed in the output of several commands (bodies printed back to back,
 * `data: {…}` lines, `jq -c` lines), in order.
 */
function jsonObjects(output: string): Json[] {
  const objects: Json[] = [];
  let depth = 0;
  let begin = -1;
  let inString = false;
  for (let index = 0; index < output.length; index += 1) {
    const character = output[index];
    if (inString) {
      if (character === '\\') index += 1;
      else if (character === '"') inString = false;
    } else if (character === '"' && depth > 0) {
      inString = true;
    } else if (character === '{') {
      if (depth === 0) begin = index;
      depth += 1;
    } else if (character === '}' && depth > 0) {
      depth -= 1;
      if (depth === 0) {
        try {
          objects.push(JSON.parse(output.slice(begin, index + 1)));
        } catch {
          // Not JSON after all (a shell comment, say): skip it.
        }
      }
    }
  }
  return objects;
}

describe('documentation tables match the code', () => {
  it('the error table lists every HTTP error code with the status the service answers it with, and no other', () => {
    const documented = errorTable(section(readPage('docs/api.md'), '## Errors'));
    expect(Object.fromEntries(documented)).toEqual(ERROR_STATUS);
  });

  it('the sandbox tool error codes are all listed, and no other', () => {
    const tools = section(readPage('docs/sandboxes.md'), '## Tool results and errors');
    const bullet = /^- Tool failures are [\s\S]*?(?=\n- )/m.exec(tools)?.[0] ?? '';
    const documented = new Set(namedCodes(bullet));
    const toolCodes = new Set([
      ...unionMembers('src/sandbox/tools/tool-context.ts', 'ToolErrorCode'),
      ...unionMembers('src/sandbox/backend.ts', 'WorkspaceFileErrorCode'),
    ]);
    expect(toolCodes.size).toBeGreaterThan(10);
    expect([...documented].sort()).toEqual([...toolCodes].sort());
  });

  it('the configuration page names every variable the configuration schema reads, and no other', () => {
    const schema = /const EnvironmentSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(readSource('src/config.ts'))?.[1];
    const read = new Set([...(schema ?? '').matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((match) => match[1]));
    expect(read.size).toBeGreaterThan(50);
    // Named in a table's first column, or beside its kin in a row's meaning (`S3_BUCKET` with
    // `MORDN_STORAGE`); the egress variables are documented with the egress policy.
    const configuration = readPage('docs/configuration.md');
    const egress = readPage('docs/sandbox-egress.md');
    const documented = (name: string) => configuration.includes(`\`${name}\``) || egress.includes(`\`${name}\``);
    expect([...read].filter((name) => !documented(name as string))).toEqual([]);
    // And no row is about a variable the service does not read.
    const rowNames = tableRows(configuration)
      .flatMap((cells) => backtickedNames(cells[0] ?? ''))
      .filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name));
    expect(rowNames.length).toBeGreaterThan(40);
    expect(rowNames.filter((name) => !read.has(name))).toEqual([]);
  });

  it('the metrics table lists every metric the service exports, and no other', () => {
    const exported = [...readSource('src/metrics.ts').matchAll(/^const [A-Z_]+ = '(mordn_[a-z_]+)';$/gm)].map(
      (match) => match[1],
    );
    expect(exported.length).toBeGreaterThan(4);
    const tabled = tableRows(section(readPage('docs/operations.md'), '## Metrics'))
      .flatMap((cells) => backtickedNames(cells[0] ?? ''))
      .filter((name) => name !== 'mordn_');
    expect(tabled.sort()).toEqual(exported.sort());
  });
});

describe('documentation shell blocks', () => {
  it('are all accounted for, in reading order: the README, then the pages of its map', () => {
    expect(ORDER[0]).toBe('README.md');
    expect(ORDER).toEqual(expect.arrayContaining(['docs/admin.md', 'docs/sandboxes.md', 'docs/chat.md']));
    expect(FOUND.map(({ page, firstLine }) => [page, firstLine])).toEqual(
      BLOCKS.map(([page, firstLine]) => [page, firstLine]),
    );
  });

  it('that start the service start it the way the test service stands in for', () => {
    const starts = blocksTreated('start');
    expect(starts.length).toBe(4);
    for (const { page, firstLine, text } of starts) {
      const treatment = treatmentOf.get(`${page}\n${firstLine}`) as Extract<Treatment, { kind: 'start' }>;
      expect(text, `${page}: ${firstLine}`).toMatch(treatment.shape);
    }
  });
});

describe.skipIf(MISSING_TOOLS.length > 0)('documentation shell blocks, run as written', () => {
  let model: ScriptedModelServer;
  let service: TestService;
  let workingDirectory: string;

  beforeAll(async () => {
    model = await startScriptedModelServer((request) => totalsPerRegionTurn(request));
    service = await startTestService({
      environment: {
        MORDN_SANDBOX_ENABLED: 'true',
        MORDN_MODEL: 'openai-compatible:scripted-1',
        MORDN_MODEL_BASE_URL: model.baseUrl,
      },
    });
    // The reader's own files: the uploads page asks for a chart.png of theirs.
    workingDirectory = await mkdtemp(path.join(tmpdir(), 'mordn-docs-'));
    await writeFile(path.join(workingDirectory, 'chart.png'), pngBytes());
  });
  afterAll(async () => {
    await service?.close();
    await model?.close();
    if (workingDirectory) await rm(workingDirectory, { recursive: true, force: true });
  });

  /** Shell text pointed at the test service. */
  const atService = (script: string) => script.replaceAll(README_ORIGIN, service.url);

  it("quickstart: `mordn init`'s printed curl line answers as the README shows", async () => {
    const printed = describeInitResult(await initialize(service.database.db), README_ORIGIN);
    const curl = printed.slice(printed.indexOf('  curl -s'));
    const { stdout } = await runBash(atService(curl), {});
    const [shownBlock] = blocksTreated('init');
    const shown = /# (\{"tenantId":.*\})$/m.exec(shownBlock?.text ?? '')?.[1] ?? '';
    expect(Object.keys(JSON.parse(stdout))).toEqual(Object.keys(JSON.parse(shown.replaceAll('…', ''))));
    expect(JSON.parse(stdout)).toMatchObject({ userId: 'user-123', permissions: ['read', 'write'] });
  });

  it('every run block, in reading order, in one shell: walkthrough, operate, uploads, sandboxes, tokens, chat', async () => {
    const runs = blocksTreated('run');
    expect(runs.map((found) => found.page)).toEqual([
      ...Array(6).fill('docs/admin.md'),
      ...Array(2).fill('docs/usage.md'),
      'docs/uploads.md',
      ...Array(3).fill('docs/sandboxes.md'),
      'docs/chat.md',
    ]);
    const finalCheck = [
      'echo',
      `echo "KEY_STATUS=$(curl -s -o /dev/null -w '%{http_code}' $BASE/v1/me -H "Authorization: Bearer $KEY" -H 'X-Chat-User: user-123')"`,
    ].join('\n');
    const script = atService([...runs.map((found) => found.text), finalCheck].join('\n'));
    const { stdout } = await runBash(
      script,
      { MORDN_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      { timeoutMs: 150_000, cwd: workingDirectory },
    );
    const printed = jsonObjects(stdout);

    // Admin walkthrough: the revocation example revokes a key of its own; the walkthrough's key
    // still works at the end.
    expect(stdout).toContain('"code":"INVALID_API_KEY"');
    expect(stdout).toMatch(/^KEY_STATUS=200$/m);
    expect(stdout).toContain('"userId":"user-123","permissions":["read","write"]');

    // Operate: the erase dry run, then the audit log's latest entry, which is that dry run.
    const operate = block('docs/admin.md', OPERATE_FIRST_LINE).text;
    const erase = printed.find((object) => object.dryRun === true);
    expect(erase.counts).toEqual(JSON.parse(/"counts":(\{[^}]*\})/.exec(operate)?.[1] ?? 'null'));
    expect(erase.status).toBe(/"status":"(complete|partial)"/.exec(operate)?.[1]);
    expect(erase.usageRows).toBe(Number(/"usageRows":(\d+)/.exec(operate)?.[1]));
    const audit = printed.find((object) => String(object.items?.[0]?.id).startsWith('aud_')).items[0];
    expect(audit).toMatchObject({ method: 'POST', status: 200, outcome: 'ok', target: { userId: 'user-123' } });
    expect(operate).toContain(`"method":"${audit.method}"`);
    expect(operate).toContain(`"route":"${audit.route}"`);
    expect(operate).toContain(`"target":{"agentId":"agt_…","userId":"user-123"}`);

    // Usage: the walkthrough's tenant by day (nothing metered yet), then its limits as set.
    const usageAnswer = printed.find((object) => Array.isArray(object.items) && object.items.length === 0);
    expect(usageAnswer).toEqual({ items: [], nextCursor: null });
    expect(printed).toContainEqual({
      tokensPerDay: 200000,
      tokensPerMonth: 4000000,
      sandboxCpuSecondsPerDay: 3600,
      storageBytes: 1073741824,
    });

    // Uploads: the bootstrap answer as shown, the PNG stored, re-signed and deleted.
    const uploads = runs.find((found) => found.page === 'docs/uploads.md')?.text ?? '';
    const bootstrap = printed.find((object) => object.features !== undefined);
    expect(bootstrap).toEqual(JSON.parse(/^# 200 (\{"features":.*\})$/m.exec(uploads)?.[1] ?? 'null'));
    expect(printed.find((object) => object.filename === 'chart.png')).toMatchObject({ mediaType: 'image/png' });
    expect(stdout).toMatch(/^204$/m);

    // Managed sandboxes: the status, then sandbox_exec in both eras.
    expect(stdout).toContain('{"enabled":true,"available":true}');
    const answer = (id: number) => printed.find((object) => object.jsonrpc === '2.0' && object.id === id);
    const exec = answer(1)?.result?.structuredContent;
    expect(exec, stdout).toMatchObject({ exitCode: 0, timedOut: false });
    expect(exec.stdout).toMatch(/^1000\nPython 3\.[\s\S]*no network\n$/);
    expect(answer(2)?.result).toMatchObject({ resultType: 'complete', structuredContent: { stdout: 'modern\n' } });

    // Per-user tokens: minted, used alone in both eras, revoked (both DELETEs print nothing), then
    // refused right after its last answer; the protected-resource metadata.
    expect(stdout).toMatch(/"token":"mordn_mcp_[A-Za-z0-9_-]{43}"/);
    for (const id of [11, 12]) {
      expect(answer(id)?.result?.structuredContent, `token call ${id}`).toMatchObject({ exitCode: 0 });
    }
    expect(stdout).toMatch(/"id":12\}401$/m);
    expect(stdout).toContain('"resource_name":"Mordn sandbox MCP"');

    // Chat: the published totals arrive as a file chunk and in history, then come back unavailable.
    const chat = runs.find((found) => found.page === 'docs/chat.md')?.text ?? '';
    const shownSize = Number(/"filename":"totals\.csv","size":(\d+)/.exec(chat)?.[1]);
    const card = printed.find((object) => object.type === 'file' && object.providerMetadata?.mordn?.sandboxFile);
    expect(card?.providerMetadata.mordn.sandboxFile).toMatchObject({ filename: 'totals.csv', size: shownSize });
    expect(card?.url).toContain('/v1/files/artifacts/');
    expect(printed.find((object) => object.type === 'text-delta')?.delta).toBe('Here are the totals.');
    const history = printed.filter((object) => object.type === 'file' && object.filename === 'totals.csv');
    expect(history.at(0)).toMatchObject({ size: shownSize, storagePath: expect.stringMatching(/^artifacts\//) });
    expect(history.at(-1)).toMatchObject({ url: '', unavailable: true });
  }, 200_000);
});
