import { copyFileSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'electron-vite';

const r = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/** Runtime dependencies bundled into out/main (see package.json: they are devDependencies for that reason). */
const BUNDLED_DEPS = ['@modelcontextprotocol/sdk', 'commander', 'execa', 'smol-toml', 'zod'];

/**
 * out/main/cli.cjs: the CLI (main/cli/bundle-entry.ts) as one CommonJS file, which bin/lightworker.js runs
 * through vm.Script with V8's code cache: Node 20 caches no compiled ES module code, and compiling the
 * bundle at every start is most of a CLI call's time (issue 12). Written whole, then renamed, so a process
 * starting during a rebuild never reads half a file. out/main/cli.js stays the ES module entry (the
 * packaged app runs it).
 */
async function writeCliCommonJs(): Promise<void> {
  const { rolldown } = await import('rolldown');
  const bundle = await rolldown({ input: r('main/cli/bundle-entry.ts'), platform: 'node', external: ['better-sqlite3', 'electron', 'vite'], logLevel: 'warn' });
  try {
    const { output } = await bundle.generate({ format: 'cjs', codeSplitting: false });
    const file = r('out/main/cli.cjs');
    writeFileSync(`${file}.${process.pid}.tmp`, asciiOnly(output[0].code));
    renameSync(`${file}.${process.pid}.tmp`, file);
  } finally {
    await bundle.close();
  }
}

/**
 * out/main/pg-thread.cjs: the PostgreSQL connection thread (main/store/pg/connection-thread.ts) as one
 * CommonJS file, which store/pg/bridge.ts reads and runs with `eval: true` (a worker cannot load a file
 * from inside the packaged app's asar). It imports only Node built-ins; `pg` comes by path at run time.
 */
async function writePgThread(): Promise<void> {
  const { rolldown } = await import('rolldown');
  const bundle = await rolldown({ input: r('main/store/pg/connection-thread.ts'), platform: 'node', logLevel: 'warn' });
  try {
    const { output } = await bundle.generate({ format: 'cjs', codeSplitting: false });
    const file = r('out/main/pg-thread.cjs');
    writeFileSync(`${file}.${process.pid}.tmp`, output[0].code);
    renameSync(`${file}.${process.pid}.tmp`, file);
  } finally {
    await bundle.close();
  }
}

/**
 * `code` with every non-ASCII character written as a \u escape (in strings, regular expressions, template
 * literals, comments and identifiers alike). V8 stores a source holding even one such character as UTF-16:
 * the bundle's 400 dashes and arrows doubled the 1.6 MB source in memory, and its wrapped copy again (6.6 MiB
 * of heap in every CLI process and leader, issue 13). An escaped character (`\—`) loses its redundant
 * backslash; U+2028/U+2029 are left as they are (escaped inside a comment they would stop ending it).
 */
function asciiOnly(code: string): string {
  // eslint-disable-next-line no-control-regex -- the ASCII range starts at NUL
  return code.replace(/(\\*)([^\x00-\x7f\u2028\u2029])/g, (_m, slashes: string, c: string) => {
    const kept = slashes.length % 2 === 1 ? slashes.slice(1) : slashes;
    return `${kept}\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/**
 * A rebuild of a stale checkout (scripts/build-state.js) keeps the previous files: processes already
 * running (an MCP server, `serve`, a page in a browser) load chunks and assets lazily by their hashed
 * names, which must not vanish under them. `npm run build` / `prepare` start clean.
 */
const emptyOutDir = process.env.LIGHTWORKER_BUILD_KEEP_OLD !== '1';

/**
 * The desktop app: main (main/desktop/index.ts, with the whole engine bundled; native better-sqlite3
 * and the other dependencies stay external), the sandboxed preload (CommonJS, as sandboxed preloads
 * must be), and the renderer (the same sources `npm run build:renderer` builds for `serve`).
 */
export default defineConfig({
  main: {
    plugins: [
      {
        // The mock worker's agent, the vscode worker's client and the spawner helper (with its module) are spawned by path (new URL('./…', import.meta.url)).
        name: 'lightworker-copy-mock-agent',
        writeBundle() {
          mkdirSync(r('out/main'), { recursive: true });
          copyFileSync(r('main/workers/mock-agent.mjs'), r('out/main/mock-agent.mjs'));
          copyFileSync(r('main/workers/vscode-client.mjs'), r('out/main/vscode-client.mjs'));
          copyFileSync(r('main/platform/proc/spawner-helper.py'), r('out/main/spawner-helper.py'));
          copyFileSync(r('main/platform/proc/spawner_containment.py'), r('out/main/spawner_containment.py'));
        },
      },
      { name: 'lightworker-cli-commonjs', closeBundle: writeCliCommonJs },
      { name: 'lightworker-pg-thread', closeBundle: writePgThread },
    ],
    build: {
      outDir: r('out/main'),
      emptyOutDir,
      // Pure-JS dependencies are bundled: one file set to load is what makes `lightworker` start fast
      // under plain Node (module resolution of zod's hundreds of files costs more than parsing them).
      // Only the native addon, electron and vite (used by `serve --dev`) stay external.
      externalizeDeps: { exclude: BUNDLED_DEPS },
      rollupOptions: {
        input: { index: r('main/desktop/index.ts'), cli: r('main/cli/packaged-entry.ts'), lib: r('main/lib/index.ts'), 'acp-driver': r('main/cli/acp-driver-entry.ts') },
        external: ['better-sqlite3', 'electron', 'vite'],
        // Chunks sit next to the entries (out/main/*.js), so every bundled module is two folders below the
        // package root, as its source is (main/<folder>/x.ts): paths built from import.meta.url (the mock
        // agent, the package root, the CLI entry) resolve the same from source and from the bundle.
        output: { chunkFileNames: '[name]-[hash].js' },
      },
    },
  },
  preload: {
    build: {
      outDir: r('out/preload'),
      emptyOutDir,
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
      emptyOutDir,
      rollupOptions: { input: { index: r('renderer/index.html') } },
      chunkSizeWarningLimit: 1500,
    },
  },
});
