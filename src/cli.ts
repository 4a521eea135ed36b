#!/usr/bin/env node
import { openDatabase } from './db/database.js';
import { describeInitResult, initialize } from './init.js';
import { loadConfigOrExit, runService } from './main.js';

const USAGE = `Usage: mordn <command>

Commands:
  serve          Start the service (the default).
  init [--json]  Create a tenant, an agent, a published default config and a read+write key
                 on an empty database, and print how to make a first request.
  migrate        Apply pending database migrations and exit.

Configuration comes from environment variables; see the README.
`;

async function runInit(json: boolean): Promise<void> {
  const config = loadConfigOrExit(process.env);
  const database = await openDatabase(config.database);
  try {
    const result = await initialize(database.db);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : describeInitResult(result, config.publicUrl));
  } finally {
    await database.close();
  }
}

async function runMigrate(): Promise<void> {
  const config = loadConfigOrExit(process.env);
  const database = await openDatabase(config.database);
  await database.close();
  process.stdout.write('Database is up to date.\n');
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      return runService(process.env);
    case 'init':
      return runInit(rest.includes('--json'));
    case 'migrate':
      return runMigrate();
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`mordn: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
