import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'electron-vite';

const r = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/**
 * The desktop app: main (main/desktop/index.ts, with the whole engine bundled; native better-sqlite3
 * and the other dependencies stay external), the sandboxed preload (CommonJS, as sandboxed preloads
 * must be), and the renderer (the same sources `npm run build:renderer` builds for `serve`).
 */
export default defineConfig({
  main: {
    plugins: [
      {
        // The mock worker's agent script is spawned by path (new URL('./mock-agent.mjs', import.meta.url)).
        name: 'lightworker-copy-mock-agent',
        writeBundle() {
          mkdirSync(r('out/main'), { recursive: true });
          copyFileSync(r('main/workers/mock-agent.mjs'), r('out/main/mock-agent.mjs'));
        },
      },
    ],
    build: {
      outDir: r('out/main'),
      rollupOptions: {
        input: { index: r('main/desktop/index.ts'), cli: r('main/desktop/cli-entry.ts') },
        external: ['better-sqlite3', 'electron', 'vite'],
      },
    },
  },
  preload: {
    build: {
      outDir: r('out/preload'),
      rollupOptions: {
        input: { index: r('preload/index.ts') },
        external: ['electron'],
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: r('renderer'),
    base: './',
    plugins: [vue()],
    build: {
      outDir: r('out/renderer'),
      rollupOptions: { input: { index: r('renderer/index.html') } },
      chunkSizeWarningLimit: 1500,
    },
  },
});
