// What the build reads, and the one-glance answer to "is out/ built from them?" that bin/lightworker.js
// asks at every start in a checkout. Only node:fs and node:path: loading more (crypto, child_process,
// build-state.js) cost an MCP server's start ~50–300 ms on a busy machine; build-state.js decides whenever
// this glance says anything but "current".
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Source folders (all files) and single files (configs, the package manifest). */
export const SOURCE_DIRS = ['main', 'preload', 'renderer'];
export const SOURCE_FILES = ['electron.vite.config.ts', 'tsconfig.json', 'tsconfig.lib.json', 'package.json'];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.vite']);

/** The outputs a current build must have; a stamp without them (half-deleted out/) is not current. */
export const OUTPUTS = ['out/main/cli.js', 'out/main/cli.cjs', 'out/main/lib.js', 'out/main/index.js', 'out/main/mock-agent.mjs', 'out/main/acp-driver.js', 'out/main/vscode-client.mjs', 'out/main/spawner-helper.py', 'out/main/spawner_containment.py', 'out/main/pg-thread.cjs', 'out/preload/index.cjs', 'out/renderer/index.html', 'out/types/lib/index.d.ts'];

export const stampPath = (root) => join(root, 'out', 'build-stamp.json');
/** Every source's path, size and mtime as the stamp's fingerprint hashed them, written beside the stamp. */
export const listingPath = (root) => join(root, 'out', 'build-stamp.list');

/** Every source file, as sorted paths relative to `root` with `/`. */
export function listSources(root) {
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(join(dir, e.name));
      } else if (e.isFile()) files.push(join(dir, e.name));
    }
  };
  for (const d of SOURCE_DIRS) if (existsSync(join(root, d))) walk(join(root, d));
  for (const f of SOURCE_FILES) if (existsSync(join(root, f))) files.push(join(root, f));
  return files.map((f) => relative(root, f).split(sep).join('/')).sort();
}

/** One line per file: path, size and mtime (a stat each; no file is read). */
export function listingOf(root, files) {
  let out = '';
  for (const f of files) {
    const st = statSync(join(root, f));
    out += `${f}\0${st.size}\0${st.mtimeMs}\n`;
  }
  return out;
}

/**
 * True when out/ is certainly built from the sources as they are: a stamp, every output, and each
 * source's path, size and mtime exactly as recorded when that build started. False means "ask
 * build-state.js" (maybe only mtimes moved; it then compares content), never "stale".
 */
export function builtAtAGlance(root) {
  let recorded;
  try {
    recorded = readFileSync(listingPath(root), 'utf8');
  } catch {
    return false;
  }
  if (!existsSync(stampPath(root)) || OUTPUTS.some((o) => !existsSync(join(root, o)))) return false;
  try {
    return listingOf(root, listSources(root)) === recorded;
  } catch {
    return false; // a source vanished between the listing and its stat: let build-state.js look
  }
}
