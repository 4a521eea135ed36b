import { defineConfig } from 'vite';

/**
 * The operator console: a static SPA served by the Mordn server at `/console/`, built to
 * `dist/console/` (`npx vite build --config src/console/vite.config.ts`). The server applies a strict
 * CSP (`script-src 'self'; style-src 'self'`), so the build must emit no inline script or style:
 * the module-preload polyfill (an inline script) is off and nothing is inlined as a data URL.
 */
const root = decodeURIComponent(new URL('.', import.meta.url).pathname);

export default defineConfig({
  root,
  base: '/console/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: '../../dist/console',
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
    // React, the AI SDK and the chat component: one ~150 kB gzip bundle, loaded once.
    chunkSizeWarningLimit: 1024,
    rolldownOptions: {
      // `'use client'` (ours and swr's) means nothing in a client-only bundle.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
});
