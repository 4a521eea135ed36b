import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';

const root = packageRoot();
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { default: string }>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** The browser component, compiled by its own config (`src/react/tsconfig.build.json`). */
const REACT_FOLDER = 'src/react';
/** The web console's pages, bundled by Vite into static files (`dist/console`), never imported. */
const CONSOLE_FOLDER = 'src/console';

/** The non-test `.ts`/`.tsx` sources under `folder`. */
function sourcesUnder(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.tsx?$/.test(file) && !/\.test\.tsx?$/.test(file) && !file.endsWith('.d.ts'))
    .map((file) => path.join(root, folder, file));
}

/**
 * The source files `npm run build` compiles into `dist/` for the server entry points, i.e. what
 * they ship: the files under the build config's `include` folders, tests and the browser
 * component excluded (as its `exclude` says).
 */
function shippedFiles(): string[] {
  const build = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
    exclude: string[];
  };
  expect(build.exclude).toEqual(['**/*.test.ts', REACT_FOLDER, CONSOLE_FOLDER]);
  const browserFolders = [REACT_FOLDER, CONSOLE_FOLDER].map((folder) => `${path.join(root, folder)}${path.sep}`);
  return build.include
    .flatMap((folder) => sourcesUnder(folder))
    .filter((file) => !browserFolders.some((folder) => file.startsWith(folder)));
}

interface ModuleImport {
  specifier: string;
  /** `import type` / `export type`: erased from the compiled output. */
  typeOnly: boolean;
}

/** Every module a file imports or re-exports, statically or through `import()`. */
function importsOf(file: string): ModuleImport[] {
  const text = readFileSync(file, 'utf8');
  const found: ModuleImport[] = [];
  // Statements start a line; JSDoc examples (` * import …`) do not.
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?[^'"`;]*?\bfrom\s+['"]([^'"]+)['"]/gm)) {
    found.push({ specifier: match[2] as string, typeOnly: match[1] !== undefined });
  }
  for (const match of text.matchAll(/^import\s+['"]([^'"]+)['"]/gm)) {
    found.push({ specifier: match[1] as string, typeOnly: false });
  }
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    found.push({ specifier: match[1] as string, typeOnly: false });
  }
  return found;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

/** The `.ts` file a relative `.js` specifier of `from` names. */
function resolveRelative(from: string, specifier: string): string {
  return path.resolve(path.dirname(from), specifier).replace(/\.js$/, '.ts');
}

/** The package's entry points that hosts bundle into their own apps (`mordn/app` is the service itself). */
const HOST_ENTRIES = ['./server', './server/hosted', './react'];

/**
 * What a host's bundle must never carry: the service's configuration (the environment schema),
 * its database, storage and upload path, and its HTTP app and server. Shared tables that hosts
 * need live in modules of their own (`src/media-types.ts`, `src/sandbox-tool-names.ts`).
 */
const SERVICE_ONLY = [
  'src/config.ts',
  'src/dependencies.ts',
  'src/compose.ts',
  'src/app.ts',
  'src/server.ts',
  'src/main.ts',
  'src/cli.ts',
  'src/telemetry/start-tracing.ts',
  'src/http/app-env.ts',
  'src/db/',
  'src/storage/',
  'src/uploads/',
  'routes/',
];
const SERVICE_PACKAGES = [
  '@hono/node-server',
  '@hono/zod-openapi',
  'kysely',
  'better-sqlite3',
  'pg',
  'pino',
  'busboy',
  // Only `mordn serve` starts the OpenTelemetry SDK; hosts' code traces through `@opentelemetry/api` alone.
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-http',
];

/** The source file of a package `exports` target (`./dist/src/exports/server.js` → `src/exports/server.ts`). */
function entrySource(target: string): string {
  const source = path.join(root, target.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'));
  return existsSync(source) ? source : `${source}x`;
}

/**
 * Every module `entry` reaches through relative imports (type imports included: a host's type
 * checker reads those too), each with the chain of files that leads to it, and the packages
 * they import.
 */
function reachableFrom(entry: string): { chains: Map<string, string[]>; packages: Map<string, string[]> } {
  const chains = new Map<string, string[]>([[entry, [entry]]]);
  const packages = new Map<string, string[]>();
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const chain = chains.get(file) as string[];
    for (const { specifier } of importsOf(file)) {
      if (!specifier.startsWith('.')) {
        const name = packageName(specifier);
        if (!packages.has(name)) packages.set(name, [...chain, specifier]);
        continue;
      }
      const compiled = resolveRelative(file, specifier);
      const target = existsSync(compiled) ? compiled : `${compiled}x`;
      if (chains.has(target)) continue;
      chains.set(target, [...chain, target]);
      queue.push(target);
    }
  }
  return { chains, packages };
}

describe('the shipped package', () => {
  it('contains no test-only code: no shipped module imports a development dependency', () => {
    const builtins = new Set(builtinModules);
    const offending: string[] = [];
    for (const file of shippedFiles()) {
      for (const { specifier, typeOnly } of importsOf(file)) {
        if (typeOnly || specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const name = packageName(specifier);
        if (builtins.has(name) || Object.hasOwn(manifest.dependencies, name)) continue;
        offending.push(`${path.relative(root, file)} imports ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('keeps the browser code apart: the component needs only dependencies and peers, and no server module imports it or the console pages', () => {
    const builtins = new Set(builtinModules);
    const component = path.join(root, REACT_FOLDER);
    const files = sourcesUnder(REACT_FOLDER);
    expect(files.length).toBeGreaterThan(3);
    const offending: string[] = [];
    for (const file of files) {
      for (const { specifier, typeOnly } of importsOf(file)) {
        if (typeOnly || specifier.startsWith('.')) continue;
        const name = packageName(specifier);
        // Browser code: no Node built-ins, only what the package or its consumer installs.
        if (specifier.startsWith('node:') || builtins.has(name))
          offending.push(`${path.relative(root, file)} imports ${specifier}`);
        else if (!Object.hasOwn(manifest.dependencies, name) && !Object.hasOwn(manifest.peerDependencies, name))
          offending.push(`${path.relative(root, file)} imports ${specifier}`);
      }
    }
    const consolePages = path.join(root, CONSOLE_FOLDER);
    for (const file of shippedFiles()) {
      for (const { specifier } of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = resolveRelative(file, specifier);
        if (target.startsWith(`${component}${path.sep}`) || target.startsWith(`${consolePages}${path.sep}`))
          offending.push(`${path.relative(root, file)} imports ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('has no import loop among the upload modules (types included)', () => {
    const uploads = path.join(root, 'src', 'uploads');
    const modules = shippedFiles().filter((file) => path.dirname(file) === uploads);
    expect(modules.length).toBeGreaterThan(5);
    const edges = new Map(
      modules.map((file) => [
        file,
        importsOf(file)
          .filter(({ specifier }) => specifier.startsWith('.'))
          .map(({ specifier }) => resolveRelative(file, specifier))
          .filter((target) => modules.includes(target)),
      ]),
    );
    const loops: string[] = [];
    const visiting: string[] = [];
    const done = new Set<string>();
    const walk = (file: string) => {
      if (done.has(file)) return;
      const at = visiting.indexOf(file);
      if (at !== -1) {
        loops.push([...visiting.slice(at), file].map((entry) => path.basename(entry)).join(' → '));
        return;
      }
      visiting.push(file);
      for (const target of edges.get(file) ?? []) walk(target);
      visiting.pop();
      done.add(file);
    };
    for (const file of modules) walk(file);
    expect([...new Set(loops)]).toEqual([]);
  });

  it.each(HOST_ENTRIES)(
    'keeps the service out of the host entry %s: no configuration, database, uploads or HTTP server',
    (name) => {
      const target = manifest.exports[name];
      if (target === undefined || typeof target === 'string') throw new Error(`package.json exports no ${name}`);
      const { chains, packages } = reachableFrom(entrySource(target.default));
      expect(chains.size).toBeGreaterThan(3);
      const show = (chain: string[]) =>
        chain.map((file) => (path.isAbsolute(file) ? path.relative(root, file) : file)).join(' → ');
      const offending: string[] = [];
      for (const [file, chain] of chains) {
        const relative = path.relative(root, file).split(path.sep).join('/');
        if (SERVICE_ONLY.some((place) => (place.endsWith('/') ? relative.startsWith(place) : relative === place)))
          offending.push(show(chain));
      }
      for (const [packageImported, chain] of packages) {
        if (SERVICE_PACKAGES.includes(packageImported)) offending.push(show(chain));
      }
      expect(offending).toEqual([]);
    },
  );

  it('keeps the tables host entries share with the service on the ground floor: they import nothing', () => {
    for (const table of ['src/media-types.ts', 'src/sandbox-tool-names.ts']) {
      expect(importsOf(path.join(root, table)), table).toEqual([]);
    }
  });
});
