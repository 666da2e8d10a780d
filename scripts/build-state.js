// Is out/ built from the sources as they are now? One answer for `bin/lightworker.js` (a checkout runs
// the bundle, never a stale one), `npm run build` / `prepare`, `npm start` and the tests' global setup.
//
// The stamp (out/build-stamp.json) records a SHA-256 over every source file's path and content, taken
// before the build started. A cheap fingerprint (path, size, mtime of each file) answers the common
// "nothing changed" case without reading the files; when it differs, the content hash decides (a
// checkout or `touch` changes mtimes, not content).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What the build reads: source folders (all files) and single files (configs, the package manifest). */
const SOURCE_DIRS = ['main', 'preload', 'renderer'];
const SOURCE_FILES = ['electron.vite.config.ts', 'tsconfig.json', 'tsconfig.lib.json', 'package.json'];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.vite']);

/** Whether `root` is a source checkout (sources present) rather than an installed package. */
export function isCheckout(root = ROOT) {
  return existsSync(join(root, 'main')) && existsSync(join(root, 'electron.vite.config.ts'));
}

function listSources(root) {
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

function fingerprintOf(root, files) {
  const h = createHash('sha256');
  for (const f of files) {
    const st = statSync(join(root, f));
    h.update(`${f}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return h.digest('hex');
}

function contentHashOf(root, files) {
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0`).update(readFileSync(join(root, f))).update('\0');
  return h.digest('hex');
}

const stampPath = (root) => join(root, 'out', 'build-stamp.json');
// The outputs a current build must have; a stamp without them (half-deleted out/) is not current.
const OUTPUTS = ['out/main/cli.js', 'out/main/cli.cjs', 'out/main/lib.js', 'out/main/index.js', 'out/main/mock-agent.mjs', 'out/main/acp-driver.js', 'out/main/vscode-client.mjs', 'out/main/spawner-helper.py', 'out/main/spawner_containment.py', 'out/main/pg-thread.cjs', 'out/preload/index.cjs', 'out/renderer/index.html', 'out/types/lib/index.d.ts'];

function readStamp(root) {
  try {
    return JSON.parse(readFileSync(stampPath(root), 'utf8'));
  } catch {
    return null;
  }
}

/**
 * `{ current, reason, hash, fingerprint }` for the checkout at `root`. Cheap when nothing changed (a stat
 * per source file); reads the sources only when the fingerprint moved.
 */
export function buildState(root = ROOT) {
  const files = listSources(root);
  const fingerprint = fingerprintOf(root, files);
  const stamp = readStamp(root);
  const missing = OUTPUTS.find((o) => !existsSync(join(root, o)));
  if (!stamp) return { current: false, reason: 'never built (no out/build-stamp.json)', files, fingerprint };
  if (missing) return { current: false, reason: `${missing} is missing`, files, fingerprint };
  const keptOld = stamp.keptOld === true;
  if (stamp.fingerprint === fingerprint) return { current: true, reason: 'fingerprint matches', hash: stamp.hash, fingerprint, keptOld };
  const hash = contentHashOf(root, files);
  if (stamp.hash !== hash) return { current: false, reason: 'sources changed since the last build', hash, fingerprint, files };
  // Same content, new mtimes: remember the fingerprint so the next check is a stat again.
  writeStamp(root, { ...stamp, fingerprint });
  return { current: true, reason: 'content hash matches', hash, fingerprint, keptOld };
}

function writeStamp(root, stamp) {
  mkdirSync(join(root, 'out'), { recursive: true });
  const tmp = `${stampPath(root)}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(stamp, null, 2) + '\n');
  renameSync(tmp, stampPath(root));
}

function runStep(root, args, env = {}) {
  return new Promise((resolve, reject) => {
    // Output to stderr: a stale-build rebuild can happen under `lightworker mcp`, whose stdout is the protocol.
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 2, 2], env: { ...process.env, ...env } });
    child.on('error', reject);
    child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${args.slice(0, 2).join(' ')} failed (${signal ?? `exit ${code}`})`))));
  });
}

/**
 * Build everything (bundle with electron-vite, library declarations with tsc, in parallel) and stamp it.
 * `keepOld` leaves the previous build's files in place (see electron.vite.config.ts) for processes running it.
 */
export async function build(root = ROOT, { keepOld = false } = {}) {
  const files = listSources(root);
  const hash = contentHashOf(root, files);
  const fingerprint = fingerprintOf(root, files);
  const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
  for (const tool of [bin('electron-vite', 'bin/electron-vite.js'), bin('typescript', 'bin/tsc')]) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run \`npm install\` in ${root} first`);
  }
  rmSync(stampPath(root), { force: true });
  if (!keepOld) rmSync(join(root, 'out', 'types'), { recursive: true, force: true }); // tsc never deletes
  await Promise.all([
    runStep(root, [bin('electron-vite', 'bin/electron-vite.js'), 'build', '--logLevel', 'warn'], { LIGHTWORKER_BUILD_KEEP_OLD: keepOld ? '1' : '' }),
    runStep(root, [bin('typescript', 'bin/tsc'), '-p', join(root, 'tsconfig.lib.json')]).then(() => copyHandWrittenDeclarations(root)),
  ]);
  writeStamp(root, { hash, fingerprint, keptOld: keepOld, builtAt: new Date().toISOString() });
}

/**
 * tsc emits no declaration for a `.mjs` source: its hand-written `.d.mts` beside it (main/platform/proc/fork-common.d.mts)
 * is copied where the emitted declarations that import it expect it, or a user's `tsc` cannot resolve them.
 */
function copyHandWrittenDeclarations(root) {
  const walk = (dir) => {
    for (const name of readdirSync(join(root, 'main', dir), { withFileTypes: true })) {
      const rel = join(dir, name.name);
      if (name.isDirectory()) walk(rel);
      else if (name.name.endsWith('.d.mts') && existsSync(join(root, 'out', 'types', dir))) copyFileSync(join(root, 'main', rel), join(root, 'out', 'types', rel));
    }
  };
  walk('');
}

const LOCK_STALE_MS = 5 * 60_000;

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * Build unless current. Several processes may find the build stale at once (parallel tests, an MCP
 * client starting many servers): one builds under a lock directory, the others wait and re-check.
 * `say` reports to the user (stderr); `keepOld` (default) keeps the previous build's files for processes
 * still running it. Returns true when this call built.
 */
export async function ensureBuild({ root = ROOT, say = (s) => process.stderr.write(`lightworker: ${s}\n`), keepOld = true } = {}) {
  // A build that kept older files is current for running it, not for packing it (`npm pack` runs prepare).
  const usable = (st) => st.current && (keepOld || !st.keptOld);
  let state = buildState(root);
  if (usable(state)) return false;
  const lock = join(root, 'out', '.build-lock');
  mkdirSync(join(root, 'out'), { recursive: true });
  let waited = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      let holder = 0;
      let age = 0;
      try {
        holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        // the holder is between mkdir and writing its pid, or just released: look again
      }
      if ((holder && !isAlive(holder)) || age > LOCK_STALE_MS) rmSync(lock, { recursive: true, force: true });
      if (!waited) say('waiting for another process that is building …');
      waited = true;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    state = buildState(root);
    if (usable(state)) return false;
    say(`${state.current ? 'the build holds files of earlier builds' : state.reason}: building (npm run build) …`);
    const t0 = Date.now();
    await build(root, { keepOld });
    say(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return true;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
