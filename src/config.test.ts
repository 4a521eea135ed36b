import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

function configError(environment: Record<string, string>): ConfigError {
  try {
    loadConfig(environment, { cwd: '/srv/app' });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has the documented defaults: embedded SQLite, fs storage, sandboxes off', () => {
    const config = loadConfig({}, { cwd: '/srv/app' });
    expect(config).toMatchObject({
      port: 8787,
      host: '127.0.0.1',
      dataDir: '/srv/app/data',
      database: { kind: 'sqlite', file: path.join('/srv/app/data', 'mordn.db') },
      storage: { kind: 'fs' },
      publicUrl: 'http://127.0.0.1:8787',
      sandbox: { enabled: false, backend: 'bwrap' },
      logLevel: 'info',
      shutdownTimeoutMs: 10_000,
    });
    expect(config.adminToken).toBeUndefined();
    expect(config.model).toBeUndefined();
  });

  it('derives the public URL from PORT and treats empty variables as unset', () => {
    const config = loadConfig({ PORT: '9000', HOST: '', MORDN_PUBLIC_URL: '' });
    expect(config.publicUrl).toBe('http://127.0.0.1:9000');
    expect(config.host).toBe('127.0.0.1');
  });

  it('selects PostgreSQL from DATABASE_URL and S3 from MORDN_STORAGE', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://mordn:pw@db:5432/mordn',
      MORDN_STORAGE: 's3',
      S3_BUCKET: 'files',
      S3_ENDPOINT: 'http://minio:9000',
      S3_FORCE_PATH_STYLE: 'true',
    });
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://mordn:pw@db:5432/mordn' });
    expect(config.storage).toEqual({
      kind: 's3',
      bucket: 'files',
      region: 'us-east-1',
      endpoint: 'http://minio:9000',
      forcePathStyle: true,
      timeoutMs: 30_000,
      checksums: 'when_required',
    });
    expect(loadConfig({ MORDN_STORAGE: 's3', S3_BUCKET: 'files', S3_TIMEOUT_MS: '2500' }).storage).toMatchObject({
      timeoutMs: 2500,
    });
    expect(() => loadConfig({ MORDN_STORAGE: 's3', S3_BUCKET: 'files', S3_TIMEOUT_MS: '0' })).toThrow(/S3_TIMEOUT_MS/);
  });

  it.each([
    [undefined, 'when_required'],
    ['', 'when_required'],
    ['when_required', 'when_required'],
    ['when_supported', 'when_supported'],
  ])('reads S3_REQUEST_CHECKSUMS=%o as %s', (value, checksums) => {
    const environment = { MORDN_STORAGE: 's3', S3_BUCKET: 'files', S3_REQUEST_CHECKSUMS: value };
    expect(loadConfig(environment).storage).toMatchObject({ kind: 's3', checksums });
  });

  it.each([
    ['openai:gpt-4.1-mini', { provider: 'openai', modelId: 'gpt-4.1-mini' }],
    ['anthropic:claude-sonnet-4-5', { provider: 'anthropic', modelId: 'claude-sonnet-4-5' }],
  ])('parses MORDN_MODEL=%s', (spec, expected) => {
    expect(loadConfig({ MORDN_MODEL: spec }).model).toEqual(expected);
  });

  it('parses an openai-compatible model with its base URL and key', () => {
    const config = loadConfig({
      MORDN_MODEL: 'openai-compatible:llama3.1:8b',
      MORDN_MODEL_BASE_URL: 'http://127.0.0.1:11434/v1/',
      MORDN_MODEL_API_KEY: 'ollama-local-key',
    });
    expect(config.model).toEqual({
      provider: 'openai-compatible',
      modelId: 'llama3.1:8b',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: 'ollama-local-key',
    });
    expect(config.secretValues).toContain('ollama-local-key');
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT', 'must be an integer from 0 to 65535'],
    [{ PORT: '70000' }, 'PORT', 'must be an integer'],
    [{ MORDN_STORAGE: 'gcs' }, 'MORDN_STORAGE', 'must be one of fs, s3'],
    [{ MORDN_STORAGE: 's3' }, 'S3_BUCKET', 'is required when MORDN_STORAGE=s3'],
    [{ S3_ENDPOINT: 'minio:9000' }, 'S3_ENDPOINT', 'http'],
    [{ DATABASE_URL: 'mysql://db/mordn' }, 'DATABASE_URL', 'postgres://'],
    [{ MORDN_ADMIN_TOKEN: 'short' }, 'MORDN_ADMIN_TOKEN', 'at least 16 characters'],
    [{ MORDN_MODEL: 'gpt-4o' }, 'MORDN_MODEL', 'openai:<id>'],
    [{ MORDN_MODEL: 'openai-compatible:llama3' }, 'MORDN_MODEL_BASE_URL', 'is required'],
    [{ MORDN_SANDBOX_ENABLED: 'maybe' }, 'MORDN_SANDBOX_ENABLED', 'must be true or false'],
    [{ MORDN_SANDBOX_BACKEND: 'firecracker' }, 'MORDN_SANDBOX_BACKEND', 'bwrap, docker'],
    [{ MORDN_PUBLIC_URL: 'https://chat.example.com/?x=1' }, 'MORDN_PUBLIC_URL', 'query'],
    [{ MORDN_LOG_LEVEL: 'verbose' }, 'MORDN_LOG_LEVEL', 'must be one of'],
    [{ MORDN_DOCKER_HOST: '/var/run/docker.sock' }, 'MORDN_DOCKER_HOST', 'unix:///path/to/docker.sock'],
    [{ MORDN_DOCKER_HOST: 'tcp://proxy:2375/v1.41' }, 'MORDN_DOCKER_HOST', 'tcp://host:port'],
    [{ MORDN_SANDBOX_CPUS: '0' }, 'MORDN_SANDBOX_CPUS', 'from 0.01 to 64'],
    [{ MORDN_SANDBOX_IDLE_SECONDS: '1' }, 'MORDN_SANDBOX_IDLE_SECONDS', 'from 10 to 86400'],
    [{ MORDN_USAGE_SAMPLE_SECONDS: '1' }, 'MORDN_USAGE_SAMPLE_SECONDS', 'from 5 to 3600'],
    [{ MORDN_SANDBOX_TOKEN_MAX_SECONDS: '59' }, 'MORDN_SANDBOX_TOKEN_MAX_SECONDS', 'from 60 to 86400'],
    [{ MORDN_SANDBOX_TOKEN_MAX_SECONDS: '86401' }, 'MORDN_SANDBOX_TOKEN_MAX_SECONDS', 'from 60 to 86400'],
    [{ MORDN_SANDBOX_WORKSPACE_MAX_FILES: '10' }, 'MORDN_SANDBOX_WORKSPACE_MAX_FILES', 'from 16 to 100000000'],
    [{ MORDN_SANDBOX_CGROUP_ROOT: 'sys/fs/cgroup' }, 'MORDN_SANDBOX_CGROUP_ROOT', 'absolute path'],
    [{ MORDN_SANDBOX_WEAK_LIMITS: 'perhaps' }, 'MORDN_SANDBOX_WEAK_LIMITS', 'must be true or false'],
    [{ MORDN_SANDBOX_RUNTIME: 'kata' }, 'MORDN_SANDBOX_RUNTIME', 'runc, runsc'],
    [{ S3_PUBLIC_ENDPOINT: 'files.example.com' }, 'S3_PUBLIC_ENDPOINT', 'http'],
    [
      { MORDN_STORAGE: 's3', S3_BUCKET: 'files', S3_REQUEST_CHECKSUMS: 'WHEN_SUPPORTED' },
      'S3_REQUEST_CHECKSUMS',
      'must be one of when_required, when_supported (got "WHEN_SUPPORTED")',
    ],
  ])('refuses %o naming %s', (environment, variable, message) => {
    const error = configError(environment);
    expect(error.variables).toContain(variable);
    expect(error.message).toContain(`${variable}: `);
    expect(error.message).toContain(message);
  });

  it('configures the docker backend and a public S3 endpoint', () => {
    const config = loadConfig({
      MORDN_SANDBOX_BACKEND: 'docker',
      MORDN_DOCKER_HOST: 'tcp://docker-proxy:2375',
      MORDN_SANDBOX_IMAGE: 'registry.example.com/mordn-sandbox:1',
      MORDN_SANDBOX_CPUS: '1.5',
      MORDN_SANDBOX_IDLE_SECONDS: '600',
      MORDN_SANDBOX_RUNTIME: 'runsc',
      MORDN_STORAGE: 's3',
      S3_BUCKET: 'files',
      S3_ENDPOINT: 'http://minio:9000',
      S3_PUBLIC_ENDPOINT: 'https://files.example.com/',
    });
    expect(config.sandbox.docker).toEqual({
      host: 'tcp://docker-proxy:2375',
      image: 'registry.example.com/mordn-sandbox:1',
      runtime: 'runsc',
    });
    expect(config.sandbox).toMatchObject({ cpus: 1.5, idleSeconds: 600 });
    expect(loadConfig({ MORDN_SANDBOX_TOKEN_MAX_SECONDS: '86400' }).sandbox.tokenMaxSeconds).toBe(86_400);
    expect(config.storage).toMatchObject({
      endpoint: 'http://minio:9000',
      publicEndpoint: 'https://files.example.com',
    });
    expect(loadConfig({}).sandbox.docker).toEqual({
      host: 'unix:///var/run/docker.sock',
      image: 'mordn-sandbox:latest',
      runtime: 'runc',
    });
    expect(loadConfig({}).sandbox).toMatchObject({
      cpus: 1,
      idleSeconds: 300,
      tokenMaxSeconds: 3600,
      workspaceMaxFiles: 65_536,
      cgroupRoot: '/sys/fs/cgroup',
      weakLimits: false,
    });
  });

  it('keeps download records 90 days and trusts no proxy by default; parses both settings', () => {
    const defaults = loadConfig({}, { cwd: '/srv/app' });
    expect(defaults.downloadAuditRetentionDays).toBe(90);
    expect(defaults.trustedProxies).toEqual([]);
    const set = loadConfig(
      { MORDN_DOWNLOAD_AUDIT_RETENTION_DAYS: '0', MORDN_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1 ,fd00::/8' },
      { cwd: '/srv/app' },
    );
    expect(set.downloadAuditRetentionDays).toBe(0);
    expect(set.trustedProxies).toEqual([
      { address: '10.0.0.0', prefix: 8, family: 'ipv4' },
      { address: '192.0.2.1', prefix: 32, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
    ]);
  });

  it('refuses a trusted-proxy entry that is not a CIDR and a retention out of range, naming each variable', () => {
    for (const entry of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/8/1', '::1/129', '10.0.0.0/x']) {
      const error = configError({ MORDN_TRUSTED_PROXIES: `127.0.0.1/32,${entry}` });
      expect(error.variables).toEqual(['MORDN_TRUSTED_PROXIES']);
      expect(error.message).toContain(entry);
    }
    expect(configError({ MORDN_DOWNLOAD_AUDIT_RETENTION_DAYS: '3651' }).variables).toEqual([
      'MORDN_DOWNLOAD_AUDIT_RETENTION_DAYS',
    ]);
  });

  it('keeps sandbox egress off by default, with the public index, ports 80 and 443 and the documented caps', () => {
    expect(loadConfig({}).sandbox.egress).toEqual({
      enabled: false,
      packageIndexUrl: 'https://pypi.org/simple/',
      packageIndexHosts: [{ kind: 'name', host: 'files.pythonhosted.org' }],
      privateCidrs: [],
      ports: [80, 443],
      maxConnections: 16,
      bytesPerDay: 1024 ** 3,
      idleSeconds: 60,
      bytesPerSecond: 100 * 1024 ** 2,
      logRetentionDays: 30,
    });
  });

  it('reads the egress variables', () => {
    const egress = loadConfig({
      MORDN_SANDBOX_EGRESS: 'on',
      MORDN_SANDBOX_EGRESS_TENANTS: 'ten_a, ten_b',
      MORDN_SANDBOX_PACKAGE_INDEX_URL: 'http://10.1.2.3:8080/simple/',
      MORDN_SANDBOX_PACKAGE_INDEX_HOSTS: 'files.example.net:8443,*.cdn.example.net',
      MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS: '10.1.2.3/32,fd00::/8',
      MORDN_SANDBOX_EGRESS_PORTS: '443,8080,8443',
      MORDN_SANDBOX_EGRESS_MAX_CONNECTIONS: '4',
      MORDN_SANDBOX_EGRESS_BYTES_PER_DAY: '1048576',
      MORDN_SANDBOX_EGRESS_IDLE_SECONDS: '5',
      MORDN_SANDBOX_EGRESS_LOG_RETENTION_DAYS: '0',
    }).sandbox.egress;
    expect(egress).toMatchObject({
      enabled: true,
      allowedTenants: ['ten_a', 'ten_b'],
      packageIndexUrl: 'http://10.1.2.3:8080/simple/',
      packageIndexHosts: [
        { kind: 'name', host: 'files.example.net', port: 8443 },
        { kind: 'wildcard', domain: 'cdn.example.net' },
      ],
      privateCidrs: [
        { address: '10.1.2.3', prefix: 32, family: 'ipv4' },
        { address: 'fd00::', prefix: 8, family: 'ipv6' },
      ],
      ports: [443, 8080, 8443],
      maxConnections: 4,
      bytesPerDay: 1048576,
      idleSeconds: 5,
      logRetentionDays: 0,
    });
  });

  it.each([
    ['MORDN_SANDBOX_EGRESS', 'true'],
    ['MORDN_SANDBOX_EGRESS', 'yes'],
    ['MORDN_SANDBOX_PACKAGE_INDEX_URL', 'ftp://mirror/simple/'],
    ['MORDN_SANDBOX_PACKAGE_INDEX_URL', 'https://user:secret@mirror/simple/'],
    ['MORDN_SANDBOX_PACKAGE_INDEX_HOSTS', 'https://files.example.net'],
    ['MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS', '10.0.0.0/33'],
    ['MORDN_SANDBOX_EGRESS_PORTS', '443,0'],
    ['MORDN_SANDBOX_EGRESS_PORTS', '443,http'],
    ['MORDN_SANDBOX_EGRESS_MAX_CONNECTIONS', '0'],
    ['MORDN_SANDBOX_EGRESS_BYTES_PER_DAY', '-1'],
    ['MORDN_SANDBOX_EGRESS_IDLE_SECONDS', '0'],
    ['MORDN_SANDBOX_EGRESS_LOG_RETENTION_DAYS', 'forever'],
  ])('refuses %s=%s, naming the variable', (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error.variables).toEqual([variable]);
  });

  it('refuses an index on a port the egress ports do not list, when egress is on', () => {
    const error = configError({
      MORDN_SANDBOX_EGRESS: 'on',
      MORDN_SANDBOX_PACKAGE_INDEX_URL: 'http://10.1.2.3:8080/simple/',
    });
    expect(error.variables).toEqual(['MORDN_SANDBOX_PACKAGE_INDEX_URL']);
    expect(error.message).toContain('port 8080');
  });

  it('reports every invalid variable at once', () => {
    const error = configError({ PORT: 'x', MORDN_STORAGE: 'gcs', MORDN_SANDBOX_ENABLED: 'sure' });
    expect(error.variables.sort()).toEqual(['MORDN_SANDBOX_ENABLED', 'MORDN_STORAGE', 'PORT']);
  });

  it('reports field and cross-field problems together, each variable once', () => {
    const error = configError({
      PORT: 'x',
      MORDN_ADMIN_TOKEN: 'short',
      MORDN_MODEL: 'openai-compatible:llama3',
      MORDN_MODEL_BASE_URL: 'not a url',
      MORDN_STORAGE: 's3',
      MORDN_SANDBOX_TOOLS: 'sandbox_exec,rm_rf',
      MORDN_SANDBOX_WORKSPACE_MAX_FILES: '3',
    });
    expect(error.variables.sort()).toEqual([
      'MORDN_ADMIN_TOKEN',
      'MORDN_MODEL_BASE_URL',
      'MORDN_SANDBOX_TOOLS',
      'MORDN_SANDBOX_WORKSPACE_MAX_FILES',
      'PORT',
      'S3_BUCKET',
    ]);
    expect(error.message.split('\n')).toEqual([
      'Invalid configuration:',
      expect.stringMatching(/^ {2}PORT: must be an integer/),
      expect.stringMatching(/^ {2}MORDN_MODEL_BASE_URL: must be an absolute http\(s\) URL$/),
      expect.stringMatching(/^ {2}MORDN_ADMIN_TOKEN: must be at least 16 characters/),
      expect.stringMatching(/^ {2}S3_BUCKET: is required when MORDN_STORAGE=s3/),
      expect.stringMatching(/^ {2}MORDN_SANDBOX_TOOLS: must list tools from/),
      expect.stringMatching(/^ {2}MORDN_SANDBOX_WORKSPACE_MAX_FILES: must be a whole number/),
    ]);
  });

  it('never echoes a secret value in its error', () => {
    const error = configError({ MORDN_ADMIN_TOKEN: 'tiny-secret' });
    expect(error.message).not.toContain('tiny-secret');
  });

  it('collects secret values for scrubbing, including the database password', () => {
    const config = loadConfig({
      MORDN_ADMIN_TOKEN: 'admin-token-0123456789',
      DATABASE_URL: 'postgres://mordn:s3cr%40tpass@db/mordn',
      AWS_SECRET_ACCESS_KEY: 'aws-secret-access-key',
      OPENAI_API_KEY: 'sk-test-0123456789',
    });
    expect(config.secretValues).toEqual(
      expect.arrayContaining(['admin-token-0123456789', 's3cr@tpass', 'aws-secret-access-key', 'sk-test-0123456789']),
    );
  });

  it.each([
    ['true', true],
    ['1', true],
    ['FALSE', false],
    ['off', false],
  ])('reads MORDN_SANDBOX_ENABLED=%s as %s', (value, expected) => {
    expect(loadConfig({ MORDN_SANDBOX_ENABLED: value }).sandbox.enabled).toBe(expected);
  });
});

/** The relative imports of a source file, resolved to absolute `.ts` paths. */
function localImports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/\bfrom '(\.{1,2}\/[^']+)'/g)].map((match) =>
    path.resolve(path.dirname(file), (match[1] as string).replace(/\.js$/, '.ts')),
  );
}

describe('the configuration module', () => {
  it('depends only on the ground floor: modules directly in src/ that import nothing of the service', () => {
    const sourceDirectory = path.dirname(fileURLToPath(import.meta.url));
    const imports = localImports(path.join(sourceDirectory, 'config.ts'));
    expect(imports.length).toBeGreaterThan(0);
    for (const imported of imports) {
      expect(path.relative(sourceDirectory, imported)).not.toContain(path.sep);
      expect(localImports(imported)).toEqual([]);
    }
  });
});

describe('loadConfig: OpenTelemetry traces', () => {
  it('are off without an OTLP endpoint, and on with either standard endpoint variable', () => {
    expect(loadConfig({}, { cwd: '/srv/app' }).telemetry).toEqual({
      enabled: false,
      protocol: 'http/protobuf',
      captureContent: false,
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).telemetry.enabled).toBe(true);
    const traces = loadConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      MORDN_OTEL_CAPTURE_CONTENT: 'true',
    }).telemetry;
    expect(traces).toEqual({ enabled: true, protocol: 'http/json', captureContent: true });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).telemetry.enabled,
    ).toBe(false);
  });

  it('refuse a protocol the exporter does not speak, or an invalid content flag, naming the variable', () => {
    const grpc = configError({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    expect(grpc.variables).toEqual(['OTEL_EXPORTER_OTLP_PROTOCOL']);
    expect(grpc.message).toContain('must be one of http/protobuf, http/json (got "grpc")');
    expect(
      configError({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      }).variables,
    ).toEqual(['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']);
    // Another signal's gRPC setting does not matter while traces are off.
    expect(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).telemetry.enabled).toBe(false);
    expect(configError({ MORDN_OTEL_CAPTURE_CONTENT: 'sometimes' }).variables).toEqual(['MORDN_OTEL_CAPTURE_CONTENT']);
  });
});
