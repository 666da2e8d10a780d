import { fileURLToPath } from 'node:url';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The console as a plain web build (`npm run build:renderer` → out/renderer), served by
 * `lightworker serve`. electron-vite.config.ts builds the same sources for the desktop window.
 */
export default defineConfig({
  root: here,
  base: './',
  plugins: [vue()],
  build: {
    outDir: fileURLToPath(new URL('../out/renderer', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
  },
});
