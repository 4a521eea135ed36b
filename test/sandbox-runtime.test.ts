import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import { SANDBOX_ENVIRONMENT, SANDBOX_USER, WORKSPACE_MOUNT } from '../src/sandbox/docker/container-spec.js';
import { createEngineApi } from '../src/sandbox/docker/engine-api.js';

const runFile = promisify(execFile);

/**
 * What sandboxed code finds installed: the package list of the sandbox image
 * (sandbox-image/packages.txt), as published in docs/sandbox-runtime.md, in the image itself, and
 * on the host whose /usr the bwrap backend runs on (.ci/run installs the same libraries there).
 */
const ROOT = packageRoot();
const DOCKER_HOST = process.env.MORDN_TEST_DOCKER_HOST ?? 'unix:///var/run/docker.sock';
const IMAGE = process.env.MORDN_TEST_SANDBOX_IMAGE ?? 'mordn-sandbox:latest';
const HOST_PYTHON = '/usr/bin/python3';

/** Import names that are not the package's name without `python3-`. */
const IMPORT_NAMES: Record<string, string> = { 'python3-pil': 'PIL' };
/** Run rather than imported (importing pip is no use to anyone). */
const PIP = 'python3-pip';

/** The packages of a list in packages.txt's format: one a line, `#` starts a comment. */
function parsePackageList(text: string): string[] {
  return text.split('\n').flatMap((line) => line.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean));
}

/** The packages the docs page publishes: the first column of the table under `## Packages`. */
function publishedPackages(markdown: string): string[] {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Packages\n'));
  if (!section) throw new Error('docs/sandbox-runtime.md has no "## Packages" section');
  return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1] as string);
}

/** The `packages=(...)` array of .ci/run: what CI installs on the host for the bwrap backend. */
function ciHostPackages(script: string): string[] {
  const array = /^packages=\(([^)]*)\)/m.exec(script);
  if (!array?.[1]) throw new Error('.ci/run has no packages=(...) list');
  return array[1].split(/\s+/).filter(Boolean);
}

const packages = parsePackageList(await readFile(path.join(ROOT, 'sandbox-image/packages.txt'), 'utf8'));
const pythonPackages = packages.filter((name) => name.startsWith('python3-'));
const modules = pythonPackages
  .filter((name) => name !== PIP)
  .map((name) => IMPORT_NAMES[name] ?? name.slice('python3-'.length));

/**
 * Imports every module named on the command line (a JSON array), runs modules of scipy that
 * pythran compiled when scipy was built (the image has a stand-in for pythran itself), runs pip,
 * and counts the CA certificates ssl's default context loads. Prints one JSON object.
 */
const PROBE = `
import importlib, json, ssl, subprocess, sys
failed = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except Exception as error:
        failed[name] = f"{type(error).__name__}: {error}"
try:
    import numpy
    from scipy.interpolate import RBFInterpolator
    from scipy.stats import siegelslopes
    siegelslopes([1.0, 2.0, 4.0, 8.0])
    RBFInterpolator(numpy.array([[0.0], [1.0], [2.0]]), numpy.array([0.0, 1.0, 4.0]))(numpy.array([[1.5]]))
except Exception as error:
    failed["scipy (pythran-built modules)"] = f"{type(error).__name__}: {error}"
pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
print(json.dumps({
    "failed": failed,
    "pip": pip.stdout.strip() if pip.returncode == 0 else "exit %d: %s" % (pip.returncode, pip.stderr.strip()),
    "caCertificates": ssl.create_default_context().cert_store_stats()["x509_ca"],
}))
`;

interface ProbeResult {
  failed: Record<string, string>;
  pip: string;
  caCertificates: number;
}

function parseProbe(stdout: string): ProbeResult {
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as ProbeResult;
}

async function dockerUnavailable(): Promise<string | undefined> {
  const api = createEngineApi(DOCKER_HOST);
  try {
    await api.call({ method: 'GET', path: '/_ping' });
    await api.call({ method: 'GET', path: `/images/${encodeURIComponent(IMAGE)}/json` });
    return undefined;
  } catch (error) {
    return `Docker at ${DOCKER_HOST} with image ${IMAGE}: ${String(error)}`;
  } finally {
    await api.close();
  }
}

const unavailable = await dockerUnavailable();
if (unavailable && process.env.MORDN_TEST_DOCKER === 'require') {
  throw new Error(`MORDN_TEST_DOCKER=require, but ${unavailable}`);
}
if (unavailable) console.warn(`Skipping the sandbox image's runtime check: ${unavailable}`);

/**
 * .ci/run installs its host packages before it sets any MORDN_TEST_*=require: where one is set,
 * a host without the libraries is a gap in that list, not a machine to skip.
 */
const hostRequired = Object.entries(process.env).some(
  ([name, value]) => name.startsWith('MORDN_TEST_') && value === 'require',
);

describe('the published package list', () => {
  it('docs/sandbox-runtime.md lists exactly the packages of sandbox-image/packages.txt', async () => {
    const published = publishedPackages(await readFile(path.join(ROOT, 'docs/sandbox-runtime.md'), 'utf8'));
    expect(new Set(published).size, 'a package is listed twice').toBe(published.length);
    expect(new Set(packages).size, 'a package is listed twice').toBe(packages.length);
    expect([...published].sort()).toEqual([...packages].sort());
  });

  it(".ci/run installs every Python library of the image on the bwrap backend's host", async () => {
    const host = ciHostPackages(await readFile(path.join(ROOT, '.ci/run'), 'utf8'));
    const missing = [...pythonPackages, 'ca-certificates'].filter((name) => !host.includes(name));
    expect(missing).toEqual([]);
  });
});

describe.skipIf(unavailable !== undefined)('the sandbox image', () => {
  it('imports every listed Python library, runs pip and loads a CA bundle, locked down as the service runs it', async () => {
    const { stdout } = await runFile(
      'docker',
      [
        'run',
        '--rm',
        '--network=none',
        '--read-only',
        '--cap-drop=ALL',
        '--security-opt=no-new-privileges',
        `--user=${SANDBOX_USER}`,
        '--tmpfs=/tmp:rw,nosuid,nodev,size=64m,mode=1777',
        `--tmpfs=${WORKSPACE_MOUNT}:rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0755`,
        `--workdir=${WORKSPACE_MOUNT}`,
        ...SANDBOX_ENVIRONMENT.map((variable) => `--env=${variable}`),
        IMAGE,
        'python3',
        '-c',
        PROBE,
        JSON.stringify(modules),
      ],
      { env: { ...process.env, DOCKER_HOST }, timeout: 90_000 },
    );
    const result = parseProbe(stdout);
    expect(result.failed).toEqual({});
    expect(result.pip).toMatch(/^pip \d+/);
    expect(result.caCertificates).toBeGreaterThan(0);
  }, 120_000);
});

describe.skipIf(!existsSync(HOST_PYTHON))(`the host's ${HOST_PYTHON} (the bwrap backend's runtime)`, () => {
  it('imports every listed Python library, runs pip and loads a CA bundle', async (context) => {
    const home = await mkdtemp(path.join(tmpdir(), 'mordn-runtime-'));
    try {
      const { stdout } = await runFile(HOST_PYTHON, ['-c', PROBE, JSON.stringify(modules)], {
        cwd: home,
        env: {
          PATH: '/usr/bin:/bin',
          HOME: home,
          LANG: 'C.UTF-8',
          PYTHONDONTWRITEBYTECODE: '1',
          MPLBACKEND: 'Agg',
          MPLCONFIGDIR: path.join(home, 'matplotlib'),
        },
        timeout: 90_000,
      });
      const result = parseProbe(stdout);
      const gaps = [
        ...Object.entries(result.failed).map(([name, error]) => `${name} (${error})`),
        ...(/^pip \d+/.test(result.pip) ? [] : [`pip (${result.pip})`]),
        ...(result.caCertificates > 0 ? [] : ['a CA bundle (ca-certificates)']),
      ];
      if (gaps.length > 0 && !hostRequired) {
        const note = `this host lacks ${gaps.join(', ')}: install .ci/run's host packages`;
        console.warn(`Skipping the host runtime check: ${note}`);
        context.skip(note);
      }
      expect(gaps).toEqual([]);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 120_000);
});
