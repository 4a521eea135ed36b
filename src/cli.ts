#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { commandUsage, parseCommandLine } from './cli-arguments.js';
import { openDatabase } from './db/database.js';
import { describeInitResult, initialize } from './init.js';
import { loadConfigOrExit, runService, secureDataDirectoryOrExit } from './main.js';
import { packageRoot } from './package-root.js';
import type { PermissionRepair } from './private-files.js';

async function runInit(json: boolean): Promise<void> {
  const config = loadConfigOrExit(process.env);
  reportRepairs(secureDataDirectoryOrExit(config));
  const database = await openDatabase(config.database);
  try {
    const result = await initialize(database.db);
    process.stdout.write(
      json
        ? `${JSON.stringify(result)}\n`
        : describeInitResult(result, config.publicUrl, { adminToken: config.adminToken !== undefined }),
    );
  } finally {
    await database.close();
  }
}

async function runMigrate(): Promise<void> {
  const config = loadConfigOrExit(process.env);
  reportRepairs(secureDataDirectoryOrExit(config));
  const database = await openDatabase(config.database);
  await database.close();
  process.stdout.write('Database is up to date.\n');
}

/** Permission changes go to stderr, so `init --json` still prints only its JSON on stdout. */
function reportRepairs(repairs: readonly PermissionRepair[]): void {
  for (const repair of repairs) {
    process.stderr.write(`mordn: made ${repair.path} private (mode ${repair.from} → ${repair.to}).\n`);
  }
}

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

async function main(argv: string[]): Promise<void> {
  const invocation = parseCommandLine(argv);
  switch (invocation.kind) {
    case 'help':
      process.stdout.write(invocation.text);
      return;
    case 'version':
      process.stdout.write(`${packageVersion()}\n`);
      return;
    case 'error':
      process.stderr.write(`mordn: ${invocation.message}\n\n${commandUsage(argv[0] ?? '')}`);
      process.exitCode = 2;
      return;
    case 'run':
      if (invocation.command === 'serve') return runService(process.env);
      if (invocation.command === 'init') return runInit(invocation.json);
      return runMigrate();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`mordn: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
