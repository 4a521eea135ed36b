import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { readEnvFile } from './env-file.js';

/** Where `scripts/mcp-clients.sh` put Node 22 and the out-of-process MCP clients. */
export interface McpClientsInstall {
  /** Node 22's `node` (the clients need Node >= 22; the suite itself may run on Node 20). */
  node: string;
  /** The MCP Inspector's launcher script (`--cli` for the CLI). */
  inspectorBin: string;
  /** The prefix whose node_modules holds @ai-sdk/mcp of AI SDK 7. */
  aiSdkDir: string;
  /** The conformance suite's CLI script. */
  conformanceBin: string;
  /** Node's compile cache for the clients (NODE_COMPILE_CACHE), beside the installs: each start is faster. */
  compileCache: string;
}

export const MCP_CLIENTS_SETUP = 'bash scripts/mcp-clients.sh';

/** The env file `scripts/mcp-clients.sh` writes, under `$MORDN_MCP_CLIENTS_CACHE` (default ~/.cache/mordn-mcp-clients). */
export function mcpClientsEnvFile(environment: NodeJS.ProcessEnv = process.env): string {
  const cache =
    environment.MORDN_MCP_CLIENTS_CACHE ??
    path.join(environment.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'mordn-mcp-clients');
  return path.join(cache, 'env');
}

function describeInstall(file: string): McpClientsInstall | string {
  if (!existsSync(file)) return `there is no ${file}`;
  const values = readEnvFile(file);
  const install = {
    node: path.join(values.MORDN_MCP_NODE22_BIN ?? '', 'node'),
    inspectorBin: values.MORDN_MCP_INSPECTOR_BIN ?? '',
    aiSdkDir: values.MORDN_MCP_AI_SDK_DIR ?? '',
    conformanceBin: values.MORDN_MCP_CONFORMANCE_BIN ?? '',
  };
  const missing = Object.entries(install).filter(([, location]) => location === '' || !existsSync(location));
  if (missing.length > 0) return `${file} names missing files (${missing.map(([name]) => name).join(', ')})`;
  return { ...install, compileCache: path.join(path.dirname(file), 'compile-cache') };
}

/**
 * The installed clients, or why there are none. With MORDN_TEST_MCP_CLIENTS=require (as in CI)
 * a missing install is a failure rather than a skip.
 */
export function findMcpClients(
  environment: NodeJS.ProcessEnv = process.env,
): { install: McpClientsInstall } | { reason: string } {
  const found = describeInstall(mcpClientsEnvFile(environment));
  if (typeof found !== 'string') return { install: found };
  const reason = `${found}: run \`${MCP_CLIENTS_SETUP}\` to install the MCP clients`;
  if (environment.MORDN_TEST_MCP_CLIENTS === 'require')
    throw new Error(`MORDN_TEST_MCP_CLIENTS=require, but ${reason}`);
  return { reason };
}

export interface FinishedProcess {
  code: number | null;
  stdout: string;
  stderr: string;
  /** It outlived its time limit and was killed. */
  timedOut: boolean;
}

/**
 * Runs Node 22 with `args` to completion (killed after `timeoutMs`), feeding `stdin` if given, so
 * a hanging client fails its test instead of stalling the suite.
 */
export function runNode(
  install: McpClientsInstall,
  args: string[],
  options: { stdin?: string; environment?: Record<string, string>; timeoutMs?: number; cwd?: string } = {},
): Promise<FinishedProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(install.node, args, {
      env: { ...process.env, NODE_COMPILE_CACHE: install.compileCache, ...options.environment },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? 30_000);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        timedOut,
      });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

/** Where `scripts/mcp-clients.sh` put the AI SDK 7 line: a prefix holding `ai@7` and its provider. */
export interface AiSdk7Install {
  /** The prefix whose node_modules holds `ai`, `@ai-sdk/openai-compatible` and `@ai-sdk/provider-utils` of AI SDK 7. */
  dir: string;
  /** The file URL of `node_modules/<name>`'s ESM entry in that prefix, to `import()`. */
  entry(name: string, subpath?: string): string;
}

/**
 * The AI SDK 7 install, or why it cannot be used here: it is missing, or this Node is older than
 * 22 (what `ai@7` needs; the suite's Node 20 run skips these tests, the Node 22 and 24 runs do
 * them). With MORDN_TEST_AI_SDK7=require (as CI sets for those runs) either is a failure.
 */
export function findAiSdk7(
  environment: NodeJS.ProcessEnv = process.env,
): { install: AiSdk7Install } | { reason: string } {
  const file = mcpClientsEnvFile(environment);
  const dir = existsSync(file) ? (readEnvFile(file).MORDN_AI_SDK7_DIR ?? '') : '';
  const major = Number(process.versions.node.split('.')[0]);
  let reason: string | undefined;
  if (major < 22) reason = `AI SDK 7 needs Node >= 22 and this is Node ${process.versions.node}`;
  else if (dir === '' || !existsSync(path.join(dir, 'node_modules', 'ai', 'package.json')))
    reason = `${file} names no AI SDK 7 install: run \`${MCP_CLIENTS_SETUP}\``;
  if (reason === undefined) {
    const entry = (name: string, subpath = '.') => {
      const root = path.join(dir, 'node_modules', name);
      const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        exports: Record<string, { import: string }>;
      };
      const target = manifest.exports[subpath]?.import;
      if (target === undefined) throw new Error(`${name} exports no ${subpath}`);
      return pathToFileURL(path.join(root, target)).href;
    };
    return { install: { dir, entry } };
  }
  if (environment.MORDN_TEST_AI_SDK7 === 'require') throw new Error(`MORDN_TEST_AI_SDK7=require, but ${reason}`);
  return { reason };
}
