import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCommand } from './run-command.js';

/** What a fresh app pins: React 18 (the oldest React `mordn/react` supports) and the AI SDK v6 hooks. */
const DEPENDENCIES = {
  '@ai-sdk/react': '3.0.328',
  react: '18.3.1',
  'react-dom': '18.3.1',
};
const DEV_DEPENDENCIES = {
  '@vitejs/plugin-react': '^6.0.0',
  vite: '~8.3.4',
};

const INDEX_HTML = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8" /><title>Consumer</title></head>
  <body><main id="root"></main><script type="module" src="/src/main.jsx"></script></body>
</html>
`;

const MAIN_JSX = `import { createRoot } from 'react-dom/client';
import { MordnChat } from 'mordn/react';
import 'mordn/react/styles.css';

const chatId = new URLSearchParams(location.search).get('chatId') ?? undefined;
createRoot(document.getElementById('root')).render(<MordnChat api="/api/chat" chatId={chatId} />);
`;

const VITE_CONFIG = `import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({ plugins: [react()] });
`;

/**
 * A new Vite React app in a temporary directory, as someone adopting `mordn/react` would start
 * one: the packed library installed from its tarball next to React 18, `@ai-sdk/react`, Vite and
 * its React plugin. Install scripts are skipped: the app only bundles browser code, so the
 * library's native server dependencies need not be built. Answers the app's directory.
 */
export async function createReactConsumerApp(tarball: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mordn-react-consumer-'));
  const manifest = {
    name: 'mordn-react-consumer',
    private: true,
    type: 'module',
    dependencies: { ...DEPENDENCIES, mordn: `file:${tarball}` },
    devDependencies: DEV_DEPENDENCIES,
  };
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  await writeFile(path.join(dir, 'index.html'), INDEX_HTML);
  await writeFile(path.join(dir, 'vite.config.js'), VITE_CONFIG);
  await mkdir(path.join(dir, 'src'));
  await writeFile(path.join(dir, 'src', 'main.jsx'), MAIN_JSX);
  await runCommand('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir });
  return dir;
}
