import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const POSTGRES_ROOT = '/usr/lib/postgresql';

/** A PostgreSQL cluster of its own, which a test may stop and restart without touching anyone else's. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, trust authentication. */
  url: string;
  port: number;
  /** `pg_ctl stop -m fast`: open connections are cut (in-flight queries fail), new ones refused. */
  stop(): Promise<void>;
  /** Starts the stopped cluster again on the same port and data. */
  start(): Promise<void>;
  /** The server's log so far (for failure messages). */
  log(): Promise<string>;
  /** Stops the cluster (immediately) and removes its directory. Safe to call twice. */
  close(): Promise<void>;
}

/** The newest installed PostgreSQL's `bin` directory, or none when the server binaries are missing. */
export function postgresBinDirectory(): string | undefined {
  if (!existsSync(POSTGRES_ROOT)) return undefined;
  const versions = readdirSync(POSTGRES_ROOT)
    .filter((version) => existsSync(path.join(POSTGRES_ROOT, version, 'bin', 'initdb')))
    .sort((left, right) => Number(right) - Number(left));
  return versions[0] === undefined ? undefined : path.join(POSTGRES_ROOT, versions[0], 'bin');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
    run('id', ['-u', 'postgres']),
    run('id', ['-g', 'postgres']),
  ]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/**
 * Creates (`initdb`) and starts (`pg_ctl`) a throwaway cluster in a fresh temporary directory, on
 * a free port of 127.0.0.1 with its socket in that directory, so the machine's shared server is
 * never involved. `initdb` refuses to run as root, so under root the cluster belongs to the
 * `postgres` user (through `runuser`). Durability is switched off: the cluster lives for one test.
 *
 * @example
 * const cluster = await startPrivatePostgres();
 * try { await cluster.stop(); await cluster.start(); } finally { await cluster.close(); }
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDirectory();
  if (!bin) throw new Error(`No PostgreSQL server binaries under ${POSTGRES_ROOT} (install postgresql).`);
  const asRoot = process.getuid?.() === 0;
  const directory = await mkdtemp(path.join(tmpdir(), 'mordn-private-pg-'));
  const dataDir = path.join(directory, 'data');
  const logFile = path.join(directory, 'server.log');
  const port = await freePort();
  const tool = (name: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(bin, name), ...args], { cwd: directory })
      : run(path.join(bin, name), args, { cwd: directory });
  const serverOptions = [
    `-p ${port}`,
    `-k ${directory}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
  ].join(' ');
  const pgCtl = (...args: string[]) => tool('pg_ctl', ['-D', dataDir, '-l', logFile, ...args]);
  let stopped = false;
  const close = async () => {
    if (stopped) return;
    stopped = true;
    await pgCtl('stop', '-m', 'immediate', '-w').catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
  };
  try {
    if (asRoot) {
      const owner = await postgresUser();
      await chown(directory, owner.uid, owner.gid);
    }
    await tool('initdb', [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--no-sync',
      '--no-instructions',
    ]);
    await pgCtl('start', '-w', '-t', '30', '-o', serverOptions);
  } catch (error) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    await close();
    throw new Error(`The private PostgreSQL cluster did not start: ${String(error)}\n${log}`);
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await pgCtl('stop', '-m', 'fast', '-w', '-t', '30');
    },
    start: async () => {
      await pgCtl('start', '-w', '-t', '30', '-o', serverOptions);
    },
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    close,
  };
}
