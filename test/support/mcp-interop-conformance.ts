import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type McpClientsInstall, runNode } from './mcp-interop-install.js';

/** One check of a conformance scenario, as the suite writes it to `checks.json`. */
export interface ConformanceCheck {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

/** The spec revisions the conformance suite has frozen requirement sets for. */
export type ConformanceRevision = '2025-11-25' | '2026-07-28';

/**
 * Runs the official conformance suite's server scenarios that `revision` requires (plus those it
 * runs but does not score) against `url`, and returns each scenario's checks by scenario name.
 * Results are read from the suite's output directory, not its coloured console summary.
 */
export async function runConformance(
  install: McpClientsInstall,
  options: { url: string; revision: ConformanceRevision; outputDir: string },
): Promise<Map<string, ConformanceCheck[]>> {
  const run = await runNode(
    install,
    [
      install.conformanceBin,
      'server',
      '--url',
      options.url,
      '--requirements',
      options.revision,
      '--timeout',
      '15000',
      '-o',
      options.outputDir,
    ],
    { timeoutMs: 90_000, cwd: options.outputDir },
  );
  if (run.timedOut) throw new Error(`the conformance suite did not finish within 90 s: ${run.stderr}`);
  const scenarios = new Map<string, ConformanceCheck[]>();
  for (const entry of await readdir(options.outputDir)) {
    // server-<scenario>-<ISO timestamp with dashes>
    const match = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    if (!match?.[1]) continue;
    const checks = JSON.parse(await readFile(path.join(options.outputDir, entry, 'checks.json'), 'utf8'));
    scenarios.set(match[1], checks as ConformanceCheck[]);
  }
  if (scenarios.size === 0) throw new Error(`the conformance suite wrote no results (exit ${run.code}): ${run.stderr}`);
  return scenarios;
}

/** The checks of a scenario that failed, as `id: message` lines. */
export function failedChecks(checks: readonly ConformanceCheck[]): string[] {
  return checks.filter((check) => check.status === 'FAILURE').map((check) => `${check.id}: ${check.errorMessage}`);
}
