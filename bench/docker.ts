import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { containerName, volumeName, workspaceContainer } from '../src/sandbox/docker/container-spec.js';
import { createDockerBackend, DEFAULT_CONTAINER_LIMITS } from '../src/sandbox/docker/docker-backend.js';
import { median } from './support.js';

const SOCKET = (process.env.MORDN_DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
const IMAGE = process.env.MORDN_SANDBOX_IMAGE ?? 'mordn-sandbox:latest';
const WARM_ROUNDS = 200;
const COLD_ROUNDS = 12;

/**
 * A bare Engine API call over a fresh node:http request on the socket: the baseline knows
 * nothing of the backend's client, pool or stream handling.
 */
function bare(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { socketPath: SOCKET, method, path, headers: body === undefined ? {} : { 'content-type': 'application/json' } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
        });
      },
    );
    request.on('error', reject);
    request.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** One exec the way a minimal client does it: create, start attached (hijacked), read to EOF, inspect. */
async function bareExec(container: string, command: string[]): Promise<number> {
  const created = await bare('POST', `/containers/${container}/exec`, {
    Cmd: command,
    AttachStdout: true,
    AttachStderr: true,
    User: '1000:1000',
  });
  const { Id } = created.json as { Id: string };
  await new Promise<void>((resolve, reject) => {
    const request = http.request({
      socketPath: SOCKET,
      method: 'POST',
      path: `/exec/${Id}/start`,
      headers: { 'content-type': 'application/json', connection: 'Upgrade', upgrade: 'tcp' },
    });
    request.on('upgrade', (_response, socket) => {
      socket.on('data', () => undefined);
      socket.on('close', () => resolve());
    });
    request.on('error', reject);
    request.end(JSON.stringify({ Detach: false, Tty: false }));
  });
  const inspected = await bare('GET', `/exec/${Id}/json`);
  return (inspected.json as { ExitCode: number }).ExitCode;
}

async function timedRounds(rounds: number, run: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const started = performance.now();
    await run();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

interface RuntimeFigures {
  warm: { backend: number; bare: number };
  cold: { backend: number; bare: number };
}

/** Warm exec and cold workspace for one OCI runtime, each against bare Engine API calls. */
async function measureRuntime(runtime: 'runc' | 'runsc'): Promise<RuntimeFigures> {
  const backend = createDockerBackend({ image: IMAGE, idleMs: 10 * 60_000, weakLimits: true, runtime });
  await backend.probe();
  const workspace = `ws_${randomBytes(8).toString('hex')}`;
  await backend.ensureWorkspace(workspace);
  const container = containerName(workspace);
  const exec = () => backend.exec(workspace, { command: 'true', timeoutMs: 30_000, maxOutputBytes: 65_536 });
  const bareWarm = () => bareExec(container, ['/bin/sh', '-c', 'true']);
  for (let round = 0; round < 20; round += 1) {
    await exec();
    await bareWarm();
  }
  // Interleaved halves, so drift of the daemon affects both sides alike.
  const warmBackend = [await timedRounds(WARM_ROUNDS / 2, exec)];
  const warmBare = [await timedRounds(WARM_ROUNDS / 2, bareWarm)];
  warmBackend.push(await timedRounds(WARM_ROUNDS / 2, exec));
  warmBare.push(await timedRounds(WARM_ROUNDS / 2, bareWarm));
  const warm = { backend: median(warmBackend), bare: median(warmBare) };
  await backend.removeWorkspace(workspace);

  const coldBackend: number[] = [];
  const coldBare: number[] = [];
  for (let round = 0; round < COLD_ROUNDS; round += 1) {
    // A first call: the container, its start and the supervisor, up to a command's answer.
    const fresh = `ws_${randomBytes(8).toString('hex')}`;
    let started = performance.now();
    await backend.exec(fresh, { command: 'true', timeoutMs: 30_000, maxOutputBytes: 1024 });
    coldBackend.push(performance.now() - started);
    await backend.removeWorkspace(fresh);

    // The same settings, volume mount included, then one bare exec.
    const bareWorkspace = `ws_${randomBytes(8).toString('hex')}`;
    const name = containerName(bareWorkspace);
    started = performance.now();
    const created = await bare(
      'POST',
      `/containers/create?name=${name}`,
      workspaceContainer(bareWorkspace, IMAGE, DEFAULT_CONTAINER_LIMITS, { mount: { type: 'volume' }, runtime }),
    );
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.json)}`);
    const startedContainer = await bare('POST', `/containers/${name}/start`);
    if (startedContainer.status !== 204) throw new Error(`start answered ${startedContainer.status}`);
    await bareExec(name, ['/bin/sh', '-c', 'true']);
    coldBare.push(performance.now() - started);
    await bare('DELETE', `/containers/${name}?force=true`);
    await bare('DELETE', `/volumes/${volumeName(bareWorkspace)}`);
  }
  await backend.close?.();
  return { warm, cold: { backend: median(coldBackend), bare: median(coldBare) } };
}

/**
 * `npm run bench -- docker`: the docker backend against bare Engine API calls on the same daemon
 * and image, measured in one run, under runc and (when the daemon has it) gVisor's runsc.
 * - warm exec: `backend.exec('true')`, forked by the workspace's supervisor, vs a bare exec of
 *   `sh -c true` in the same container (target ≤ 1.2×);
 * - cold workspace: the first `exec` into a new workspace (container, start, supervisor) vs a
 *   bare `create` + `start` + exec of the same image and settings (target ≤ 1.5×);
 * - runsc against runc for both.
 */
export async function benchDocker(): Promise<void> {
  const info = await bare('GET', '/info');
  const runtimes = (info.json as { Runtimes?: Record<string, unknown> }).Runtimes ?? {};
  const figures: Partial<Record<'runc' | 'runsc', RuntimeFigures>> = { runc: await measureRuntime('runc') };
  if (runtimes.runsc) figures.runsc = await measureRuntime('runsc');
  else console.log('The daemon has no runsc runtime: gVisor is not measured.');

  const ms = (value: number) => `${value.toFixed(2)} ms`;
  for (const [runtime, figure] of Object.entries(figures)) {
    console.log(
      `docker ${runtime} warm exec (median of ${WARM_ROUNDS}): backend ${ms(figure.warm.backend)}, bare Engine API ${ms(figure.warm.bare)}; ratio ${(figure.warm.backend / figure.warm.bare).toFixed(3)}× (target ≤ 1.2×)`,
    );
    console.log(
      `docker ${runtime} cold workspace (median of ${COLD_ROUNDS}): first exec ${ms(figure.cold.backend)}, bare create + start + exec ${ms(figure.cold.bare)}; ratio ${(figure.cold.backend / figure.cold.bare).toFixed(3)}× (target ≤ 1.5×)`,
    );
  }
  const { runc, runsc } = figures;
  if (runc && runsc) {
    console.log(
      `runsc vs runc: warm exec ${(runsc.warm.backend / runc.warm.backend).toFixed(2)}×, cold workspace ${(runsc.cold.backend / runc.cold.backend).toFixed(2)}×`,
    );
  }
}
