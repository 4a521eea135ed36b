import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { containerName, legacyVolumeName, volumeName } from '../src/sandbox/docker/container-spec.js';
import { createDockerBackend, type DockerBackendOptions } from '../src/sandbox/docker/docker-backend.js';
import { createEngineApi, EngineApiError } from '../src/sandbox/docker/engine-api.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { eventually } from './support/poll.js';
import {
  describeSandboxBackendContract,
  newWorkspaceId,
  SANDBOX_CONTRACT_LIMITS,
  SOCKET_FAMILIES_PROBE,
} from './support/sandbox-backend-contract.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';
import { removeWorkspacesRoot } from './support/workspace-roots.js';

const runFile = promisify(execFile);

const ENABLED = { schemaVersion: 1 as const, runtime: { sandbox: { enabled: true } } };

/**
 * The docker backend against a real daemon and the real sandbox image. CI sets
 * MORDN_TEST_DOCKER=require (see .ci/run), so a missing daemon or image fails the run there;
 * elsewhere the suite is skipped with the reason printed.
 */
const DOCKER_HOST = process.env.MORDN_TEST_DOCKER_HOST ?? 'unix:///var/run/docker.sock';
const IMAGE = process.env.MORDN_TEST_SANDBOX_IMAGE ?? 'mordn-sandbox:latest';
const api = createEngineApi(DOCKER_HOST);

async function dockerUnavailable(): Promise<string | undefined> {
  try {
    await api.call({ method: 'GET', path: '/_ping' });
    await api.call({ method: 'GET', path: `/images/${encodeURIComponent(IMAGE)}/json` });
    return undefined;
  } catch (error) {
    return `Docker at ${DOCKER_HOST} with image ${IMAGE}: ${String(error)}`;
  }
}

const unavailable = await dockerUnavailable();
if (unavailable && process.env.MORDN_TEST_DOCKER === 'require') {
  throw new Error(`MORDN_TEST_DOCKER=require, but ${unavailable}`);
}
if (unavailable) console.warn(`Skipping the docker backend suite: ${unavailable}`);

/**
 * gVisor as well, when MORDN_TEST_RUNSC is set (`require` fails the run without a runsc runtime
 * on the daemon). Not the whole contract: Debian 12's runsc (20221219) answers every `statx`
 * with EINVAL, so coreutils' `ls` and `stat` fail inside and the contract's shell probes cannot
 * run; these cases probe the same guarantees with Python, which uses `fstatat`.
 */
const runscWanted = process.env.MORDN_TEST_RUNSC !== undefined && process.env.MORDN_TEST_RUNSC !== '';
const runscMissing = runscWanted ? (unavailable ?? (await runtimeMissing('runsc'))) : 'MORDN_TEST_RUNSC is not set';
if (runscMissing && process.env.MORDN_TEST_RUNSC === 'require') {
  throw new Error(`MORDN_TEST_RUNSC=require, but ${runscMissing}`);
}

async function runtimeMissing(runtime: string): Promise<string | undefined> {
  const { body } = await api.call<{ Runtimes?: Record<string, unknown> }>({ method: 'GET', path: '/info' });
  return body?.Runtimes?.[runtime] ? undefined : `the Docker daemon at ${DOCKER_HOST} has no ${runtime} runtime`;
}

/** The workspaces' own filesystems (the disk quota), on this host beside the daemon. */
const workspacesRoot = await mkdtemp(path.join(tmpdir(), 'mordn-docker-'));
const workspacesDir = path.join(workspacesRoot, 'workspaces');
const workspaces = new Set<string>();
function docker(options: Partial<DockerBackendOptions> = {}) {
  return createDockerBackend({
    host: DOCKER_HOST,
    image: IMAGE,
    limits: SANDBOX_CONTRACT_LIMITS,
    workspacesDir,
    quota: { maxBytes: 256 * 1024 ** 2, maxFiles: 20_000 },
    ...options,
  });
}

async function inspectContainer(workspaceId: string) {
  try {
    return (await api.call<Json>({ method: 'GET', path: `/containers/${containerName(workspaceId)}/json` })).body;
  } catch (error) {
    if (error instanceof EngineApiError && error.status === 404) return undefined;
    throw error;
  }
}

async function volumeExists(workspaceId: string): Promise<boolean> {
  return api.call({ method: 'GET', path: `/volumes/${volumeName(workspaceId)}` }).then(
    () => true,
    (error: unknown) => {
      if (error instanceof EngineApiError && error.status === 404) return false;
      throw error;
    },
  );
}

/** Polls until the workspace's container is not running; false if it still runs after `ms`. */
function stopsWithin(workspaceId: string, ms: number): Promise<boolean> {
  return eventually(async () => (await inspectContainer(workspaceId))?.State.Running !== true, {
    timeoutMs: ms,
    intervalMs: 200,
  });
}

afterAll(async () => {
  const backend = docker();
  for (const workspaceId of workspaces) await backend.removeWorkspace(workspaceId).catch(() => undefined);
  const weak = docker({ workspacesDir: undefined, weakLimits: true });
  for (const workspaceId of workspaces) await weak.removeWorkspace(workspaceId).catch(() => undefined);
  await removeWorkspacesRoot(workspacesRoot);
  await api.close();
});

describe.skipIf(unavailable !== undefined)('docker backend', () => {
  describeSandboxBackendContract('docker', async () => ({ backend: docker(), cleanup: async () => undefined }));
  describe.skipIf(runscMissing !== undefined)('under gVisor (runsc)', () => {
    const backend = docker({ runtime: 'runsc', quota: { maxBytes: 5 * 1024 ** 2, maxFiles: 200 } });
    const workspace = newWorkspaceId();
    workspaces.add(workspace);
    const run = (command: string, timeoutMs = 30_000) =>
      backend.exec(workspace, { command, timeoutMs, maxOutputBytes: 65_536 });

    it('runs the workspace container on the gVisor kernel, locked down like runc', async () => {
      await backend.probe();
      await backend.ensureWorkspace(workspace);
      const container = await inspectContainer(workspace);
      expect(container.HostConfig).toMatchObject({ Runtime: 'runsc', NetworkMode: 'none', ReadonlyRootfs: true });
      const result = await run(
        'python3 -c "import os; print(open(\'/proc/version\').read().strip()); print(os.getuid(), os.getcwd())"',
      );
      const [kernel, identity] = result.stdout.trim().split('\n');
      expect(kernel).not.toBe((await readFile('/proc/version', 'utf8')).trim());
      expect(identity).toBe('1000 /workspace');
    });

    it('has no network', async () => {
      const result = await run(
        "python3 -c \"import socket; s = socket.socket(); s.settimeout(2)\ntry:\n  s.connect(('1.1.1.1', 80)); print('connected')\nexcept OSError as e: print('refused')\"",
      );
      expect(result.stdout).toBe('refused\n');
    });

    it('runs every process under the workspace seccomp filter too: sockets of AF_UNIX, AF_INET and AF_INET6 only', async () => {
      const result = await run(`python3 -c '${SOCKET_FAMILIES_PROBE}'`);
      expect(result.exitCode, result.stderr).toBe(0);
      const families = JSON.parse(result.stdout) as Record<string, string>;
      expect(families).toMatchObject({ AF_UNIX: 'OK', AF_INET: 'OK', AF_INET6: 'OK', AF_VSOCK: 'EAFNOSUPPORT' });
      // gVisor would take this as AF_INET: only the filter tells it apart.
      expect(families['AF_INET|1<<32']).toBe('EAFNOSUPPORT');
      const status = await run("grep -E '^Seccomp:' /proc/self/status");
      expect(status.stdout).toMatch(/^Seccomp:\s+2$/m);
    });

    it('reads, writes and lists files, and refuses planted symlinks', async () => {
      await backend.writeFile(workspace, 'notes/a.txt', Readable.from([Buffer.from('hello')]), { maxBytes: 1024 });
      const file = await backend.openFile(workspace, 'notes/a.txt', { maxBytes: 1024 });
      const chunks: Buffer[] = [];
      for await (const chunk of file.body) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('hello');
      expect((await backend.listFiles(workspace, 'notes', { maxEntries: 10 })).entries).toEqual([
        { name: 'a.txt', type: 'file', size: 5 },
      ]);
      await run('ln -s /etc etc-link && ln -s notes dir-link');
      for (const planted of ['etc-link/passwd', 'dir-link/a.txt']) {
        await expect(backend.openFile(workspace, planted, { maxBytes: 1024 * 1024 }), planted).rejects.toMatchObject({
          code: 'SYMLINK',
        });
        await expect(
          backend.writeFile(workspace, planted, Readable.from([Buffer.from('x')]), { maxBytes: 10 }),
          planted,
        ).rejects.toMatchObject({ code: 'SYMLINK' });
      }
    });

    it('kills a timed-out call with what it left behind, and holds the disk quota', async () => {
      const result = await run('sleep 300 & nohup sleep 301 >/dev/null 2>&1 & sleep 30', 1000);
      expect(result.timedOut).toBe(true);
      const left = await run(
        "python3 -c \"import os; print(sum(1 for p in os.listdir('/proc') if p.isdigit() and open('/proc/' + p + '/cmdline', 'rb').read().startswith(b'sleep\\x0030')))\"",
      );
      expect(left.stdout).toBe('0\n');
      const full = await run('dd if=/dev/zero of=big bs=1M count=8; rm -f big');
      expect(full.stderr).toContain('No space left on device');
    });
  });

  describe('containers', () => {
    const backend = docker();
    const workspace = newWorkspaceId();
    workspaces.add(workspace);

    it('ensureWorkspace creates the workspace filesystem and starts the container; the next calls use them', async () => {
      expect(await inspectContainer(workspace)).toBeUndefined();
      await backend.ensureWorkspace(workspace);
      expect(await volumeExists(workspace)).toBe(false);
      expect((await inspectContainer(workspace))?.State.Running).toBe(true);
      const result = await backend.exec(workspace, {
        command: 'echo hi > f && cat f',
        timeoutMs: 15_000,
        maxOutputBytes: 1024,
      });
      expect(result.stdout).toBe('hi\n');
    });

    it('runs the container locked down, with the workspace filesystem as its only mount', async () => {
      const container = await inspectContainer(workspace);
      const hostConfig = container.HostConfig;
      expect(hostConfig).toMatchObject({
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Privileged: false,
        ReadonlyRootfs: true,
        PidsLimit: SANDBOX_CONTRACT_LIMITS.processes,
        Memory: SANDBOX_CONTRACT_LIMITS.memoryBytes,
        NanoCpus: 1e9,
      });
      expect(Object.keys(hostConfig.Tmpfs)).toEqual(['/tmp']);
      expect(hostConfig.Binds ?? []).toEqual([]);
      expect(hostConfig.Ulimits).toEqual(
        expect.arrayContaining([
          { Name: 'nofile', Soft: SANDBOX_CONTRACT_LIMITS.openFiles, Hard: 1024 },
          { Name: 'fsize', Soft: SANDBOX_CONTRACT_LIMITS.fileSizeBytes, Hard: SANDBOX_CONTRACT_LIMITS.fileSizeBytes },
        ]),
      );
      expect(container.Config.User).toBe('1000:1000');
      expect(container.Mounts).toEqual([
        expect.objectContaining({
          Type: 'bind',
          Source: path.join(workspacesDir, workspace),
          Destination: '/workspace',
        }),
      ]);
      const environment = (container.Config.Env as string[]).map((entry) => entry.slice(0, entry.indexOf('=')));
      expect(environment).not.toContain('MORDN_TEST_SECRET');
      expect(environment.filter((name) => name.startsWith('MORDN_') || name.startsWith('AWS_'))).toEqual([]);
    });

    it('offers the document libraries of the sandbox image, writing only where it may', async () => {
      const result = await backend.exec(workspace, {
        command:
          'python3 -c "import pandas, openpyxl, docx, pypdf, matplotlib; import matplotlib.pyplot as plt; ' +
          "plt.plot([1, 2]); plt.savefig('chart.png'); print('ok')\"",
        timeoutMs: 60_000,
        maxOutputBytes: 65_536,
      });
      expect(result).toMatchObject({ exitCode: 0, stdout: 'ok\n' });
      const chart = await backend.openFile(workspace, 'chart.png', { maxBytes: 1024 * 1024 });
      chart.body.resume();
      expect(chart.size).toBeGreaterThan(1000);
    });

    it('kills only the timed-out call: a concurrent call in the same workspace runs on, the container stays', async () => {
      const concurrent = backend.exec(workspace, {
        command: 'sleep 2; cat f',
        timeoutMs: 15_000,
        maxOutputBytes: 1024,
      });
      const result = await backend.exec(workspace, {
        command: "setsid sh -c 'sleep 40' & sleep 30",
        timeoutMs: 500,
        maxOutputBytes: 1024,
      });
      expect(result.timedOut).toBe(true);
      expect((await inspectContainer(workspace))?.State.Running).toBe(true);
      expect((await concurrent).stdout).toBe('hi\n');
      const left = await backend.exec(workspace, { command: 'ps -eo args', timeoutMs: 15_000, maxOutputBytes: 65_536 });
      expect(left.stdout).not.toContain('sleep 40');
      expect(left.stdout).not.toContain('sleep 30');
    });

    it('holds the disk quota of the workspace filesystem against dd', async () => {
      const small = docker({ quota: { maxBytes: 5 * 1024 ** 2, maxFiles: 200 } });
      const full = newWorkspaceId();
      workspaces.add(full);
      await small.ensureWorkspace(full);
      const result = await small.exec(full, {
        command: 'dd if=/dev/zero of=a bs=1M count=8; dd if=/dev/zero of=b bs=1M count=8; cat /proc/self/mountinfo',
        timeoutMs: 15_000,
        maxOutputBytes: 65_536,
      });
      expect(result.stderr).toContain('No space left on device');
      expect(result.stdout).not.toContain(workspacesDir);
      expect(result.stdout).not.toContain(full);
      const { stdout } = await runFile('du', ['-s', '--block-size=1', path.join(workspacesDir, '.images')]).catch(
        async () => runFile('du', ['-s', '--block-size=1', workspacesDir]),
      );
      expect(Number(stdout.split('\t')[0])).toBeLessThanOrEqual(5 * 1024 ** 2 + 8 * 1024 ** 2 + 256 * 1024 ** 2);
    });

    it('kills inside the container at its memory limit, says OUT_OF_MEMORY, and keeps the other calls', async () => {
      const small = docker({ limits: { ...SANDBOX_CONTRACT_LIMITS, memoryBytes: 256 * 1024 ** 2 } });
      const hungry = newWorkspaceId();
      workspaces.add(hungry);
      await small.ensureWorkspace(hungry);
      const run = (command: string) => small.exec(hungry, { command, timeoutMs: 30_000, maxOutputBytes: 4096 });
      const neighbour = run('sleep 2; echo neighbour done');
      const result = await run(`python3 -c "b = b'x' * (400 * 1024 * 1024)"`);
      expect(result).toMatchObject({ outOfMemory: true, exitCode: 137 });
      expect(result.message).toMatch(/^OUT_OF_MEMORY: .*256 MiB/);
      expect((await neighbour).stdout).toBe('neighbour done\n');
      expect((await inspectContainer(hungry))?.State.Running).toBe(true);
    });

    it('moves a workspace of the volume layout into its own filesystem, files and all', async () => {
      const moved = newWorkspaceId();
      workspaces.add(moved);
      const legacy = legacyVolumeName(moved);
      await api.call({ method: 'POST', path: '/volumes/create', body: { Name: legacy } });
      // What the earlier layout left: a file written by the sandbox user into the volume.
      const writer = `${containerName(moved)}-writer`;
      await api.call({
        method: 'POST',
        path: `/containers/create?name=${writer}`,
        body: {
          Image: IMAGE,
          User: '1000:1000',
          Entrypoint: ['/bin/sh'],
          Cmd: ['-c', 'mkdir -p /workspace/kept && echo from-the-volume > /workspace/kept/old.txt'],
          HostConfig: { NetworkMode: 'none', Mounts: [{ Type: 'volume', Source: legacy, Target: '/workspace' }] },
        },
      });
      await api.call({ method: 'POST', path: `/containers/${writer}/start` });
      await api.call({ method: 'POST', path: `/containers/${writer}/wait` });
      await api.call({ method: 'DELETE', path: `/containers/${writer}?force=true` });

      await backend.ensureWorkspace(moved);
      const result = await backend.exec(moved, {
        command: 'cat kept/old.txt',
        timeoutMs: 15_000,
        maxOutputBytes: 1024,
      });
      expect(result.stdout).toBe('from-the-volume\n');
      expect((await inspectContainer(moved))?.Mounts?.[0]?.Type).toBe('bind');
      const gone = await api.call({ method: 'GET', path: `/volumes/${legacy}`, accept: [404] });
      expect(gone.status).toBe(404);
    });

    it('removes the container and the workspace filesystem, and again without complaint', async () => {
      const doomed = newWorkspaceId();
      workspaces.add(doomed);
      await backend.ensureWorkspace(doomed);
      await backend.exec(doomed, { command: 'echo x > y', timeoutMs: 15_000, maxOutputBytes: 1024 });
      await backend.removeWorkspace(doomed);
      expect(await inspectContainer(doomed)).toBeUndefined();
      expect(existsSync(path.join(workspacesDir, doomed))).toBe(false);
      await expect(backend.removeWorkspace(doomed)).resolves.toBeUndefined();
    });

    it('creates one container when first calls race', async () => {
      const racing = newWorkspaceId();
      workspaces.add(racing);
      const other = docker();
      const results = await Promise.all(
        [backend, other, backend, other].map(async (each, index) => {
          await each.ensureWorkspace(racing);
          return each.exec(racing, { command: `echo ${index}`, timeoutMs: 15_000, maxOutputBytes: 1024 });
        }),
      );
      expect(results.map((result) => result.stdout)).toEqual(['0\n', '1\n', '2\n', '3\n']);
      const listed = await api.call<unknown[]>({
        method: 'GET',
        path: `/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label: [`org.mordn.workspace=${racing}`] }))}`,
      });
      expect(listed.body).toHaveLength(1);
    });
  });

  describe('idle stop', () => {
    it('stops an idle container, keeps its files, and the next call finds them', async () => {
      const backend = docker({ idleMs: 1000 });
      const workspace = newWorkspaceId();
      workspaces.add(workspace);
      await backend.ensureWorkspace(workspace);
      await backend.exec(workspace, { command: 'echo kept > k', timeoutMs: 15_000, maxOutputBytes: 1024 });
      expect(await stopsWithin(workspace, 10_000)).toBe(true);
      const after = await backend.exec(workspace, { command: 'cat k', timeoutMs: 15_000, maxOutputBytes: 1024 });
      expect(after.stdout).toBe('kept\n');
    });

    it('stops containers an earlier process left running, once probed', async () => {
      const workspace = newWorkspaceId();
      workspaces.add(workspace);
      await docker().ensureWorkspace(workspace);
      expect((await inspectContainer(workspace))?.State.Running).toBe(true);
      // A new process (as after a restart) that never used this workspace.
      await docker({ idleMs: 1000 }).probe();
      expect(await stopsWithin(workspace, 10_000)).toBe(true);
    });

    it('does not stop a container while a command runs in it', async () => {
      const backend = docker({ idleMs: 500 });
      const workspace = newWorkspaceId();
      workspaces.add(workspace);
      await backend.ensureWorkspace(workspace);
      const result = await backend.exec(workspace, {
        command: 'sleep 2; echo done',
        timeoutMs: 15_000,
        maxOutputBytes: 1024,
      });
      expect(result).toMatchObject({ exitCode: 0, stdout: 'done\n' });
    });
  });

  describe('readiness', () => {
    it('probes a reachable daemon with the image', async () => {
      await expect(docker().probe()).resolves.toBeUndefined();
    });

    it('fails the probe when the image is missing, naming it', async () => {
      await expect(docker({ image: 'mordn-missing-image:none' }).probe()).rejects.toThrow(/mordn-missing-image:none/);
    });

    it('fails the probe for an image built for an older contract (no seccomp loader), saying to rebuild it', async () => {
      // The sandbox image as it was before python3-seccomp: the same files, an older label.
      const old = 'mordn-sandbox-contract-1:test';
      const { stdout } = await runFile('docker', ['create', IMAGE]);
      const container = stdout.trim();
      try {
        await runFile('docker', ['commit', '--change', 'LABEL org.mordn.sandbox-image.contract=1', container, old]);
        await expect(docker({ image: old }).probe()).rejects.toThrow(
          `The sandbox image ${old} was built for an older version of Mordn (image contract 1, 2 needed`,
        );
      } finally {
        await runFile('docker', ['rm', '-f', container]);
        await runFile('docker', ['rmi', '-f', old]).catch(() => undefined);
      }
    });

    it('runs nothing in an image that cannot load the seccomp filter: the call fails, naming why', async () => {
      // Labelled as current, but without libseccomp's bindings (a hand-made image gone wrong).
      const broken = 'mordn-sandbox-no-seccomp:test';
      const { stdout } = await runFile('docker', [
        'create',
        '--user',
        '0',
        '--entrypoint',
        'sh',
        IMAGE,
        '-c',
        'rm -f /usr/lib/python3/dist-packages/seccomp*.so',
      ]);
      const container = stdout.trim();
      const backend = docker({ image: broken });
      const workspace = newWorkspaceId();
      workspaces.add(workspace);
      try {
        await runFile('docker', ['start', '--attach', container]);
        await runFile('docker', ['commit', '--change', 'USER 1000:1000', container, broken]);
        await backend.probe();
        const canary = `canary-${workspace}`;
        await expect(
          backend.exec(workspace, { command: `touch ${canary}`, timeoutMs: 15_000, maxOutputBytes: 1024 }),
        ).rejects.toThrow(
          'The workspace supervisor could not start: python3-seccomp is not installed in the sandbox image (rebuild it',
        );
        // Nothing ran: the command's file is not in the workspace (looked at from outside the filter).
        const listed = await runFile('docker', ['exec', containerName(workspace), 'ls', '-A', '/workspace']);
        expect(listed.stdout).not.toContain(canary);
      } finally {
        await backend.removeWorkspace(workspace).catch(() => undefined);
        await runFile('docker', ['rm', '-f', container]);
        await runFile('docker', ['rmi', '-f', broken]).catch(() => undefined);
      }
    });

    it('fails the probe when the daemon is unreachable', async () => {
      await expect(docker({ host: 'unix:///nonexistent/docker.sock' }).probe()).rejects.toThrow();
    });

    it('serves MCP tool calls through the docker backend, and reports it unavailable without its image', async () => {
      const withImage = async <T>(image: string, use: (service: TestService, fixture: AgentFixture) => Promise<T>) => {
        const service = await startTestService({
          environment: {
            MORDN_SANDBOX_ENABLED: 'true',
            MORDN_SANDBOX_BACKEND: 'docker',
            MORDN_DOCKER_HOST: DOCKER_HOST,
            MORDN_SANDBOX_IMAGE: image,
          },
        });
        try {
          return await use(service, await createAgentFixture(service.database.db, { published: ENABLED }));
        } finally {
          await service.close();
        }
      };
      const status = async (service: TestService, fixture: AgentFixture) =>
        readJson(await service.fetch('/v1/sandbox/status', { headers: agentHeaders(fixture.key, 'alice') }));

      await withImage(IMAGE, async (service, fixture) => {
        expect(await status(service, fixture)).toStrictEqual({ enabled: true, available: true });
        const client = await connectSdkClient(service, fixture.key, 'alice');
        try {
          const result = await callTool(client, 'sandbox_exec', { command: 'echo hello > note.txt && pwd && id -u' });
          expect(result.value).toMatchObject({ exitCode: 0, stdout: '/workspace\n1000\n' });
          const read = await callTool(client, 'sandbox_read_file', { path: 'note.txt' });
          expect(read.value).toEqual({ path: 'note.txt', size: 6, content: 'hello\n' });
        } finally {
          await client.close();
        }
        const [workspace] = await service.database.db.selectFrom('workspaces').select(['id', 'backend']).execute();
        expect(workspace?.backend).toBe('docker');
        if (workspace) {
          workspaces.add(workspace.id);
          expect((await inspectContainer(workspace.id))?.Mounts?.[0]?.Type).toBe('bind');
        }
      });
      await withImage('mordn-missing-image:none', async (service, fixture) => {
        expect(await status(service, fixture)).toStrictEqual({ enabled: true, available: false });
      });
    });
  });
});
