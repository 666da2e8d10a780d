// Is out/ built from the sources as they are now? One answer for `bin/lightworker.js` (a checkout runs
// the bundle, never a stale one), `npm run build` / `prepare`, `npm start` and the tests' global setup.
//
// The stamp (out/build-stamp.json) records a SHA-256 over every source file's path and content, taken
// before the build started. A cheap fingerprint (path, size, mtime of each file) answers the common
// "nothing changed" case without reading the files; when it differs, the content hash decides (a
// checkout or `touch` changes mtimes, not content). The fingerprinted listing itself is kept beside the
// stamp (out/build-stamp.list), so bin/lightworker.js compares it with a stat walk of its own
// (build-sources.js) and loads this file only when they differ.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listingOf, listingPath, listSources, OUTPUTS, stampPath } from './build-sources.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Whether `root` is a source checkout (sources present) rather than an installed package. */
export function isCheckout(root = ROOT) {
  return existsSync(join(root, 'main')) && existsSync(join(root, 'electron.vite.config.ts'));
}

function fingerprintOf(listing) {
  return createHash('sha256').update(listing).digest('hex');
}

function contentHashOf(root, files) {
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0`).update(readFileSync(join(root, f))).update('\0');
  return h.digest('hex');
}


function readListing(root) {
  try {
    return readFileSync(listingPath(root), 'utf8');
  } catch {
    return null;
  }
}

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
  const listing = listingOf(root, files);
  const fingerprint = fingerprintOf(listing);
  const stamp = readStamp(root);
  const missing = OUTPUTS.find((o) => !existsSync(join(root, o)));
  if (!stamp) return { current: false, reason: 'never built (no out/build-stamp.json)', files, fingerprint };
  if (missing) return { current: false, reason: `${missing} is missing`, files, fingerprint };
  const keptOld = stamp.keptOld === true;
  if (stamp.fingerprint === fingerprint) {
    // A stamp written before the listing was kept beside it: add it, so the next start takes one glance.
    if (readListing(root) !== listing) writeStamp(root, stamp, listing);
    return { current: true, reason: 'fingerprint matches', hash: stamp.hash, fingerprint, keptOld };
  }
  const hash = contentHashOf(root, files);
  if (stamp.hash !== hash) return { current: false, reason: 'sources changed since the last build', hash, fingerprint, files };
  // Same content, new mtimes: remember the fingerprint so the next check is a stat again.
  writeStamp(root, { ...stamp, fingerprint }, listing);
  return { current: true, reason: 'content hash matches', hash, fingerprint, keptOld };
}

/** The stamp, then the listing its fingerprint hashes (each whole, by rename: parallel checks may race). */
function writeStamp(root, stamp, listing) {
  mkdirSync(join(root, 'out'), { recursive: true });
  const write = (path, text) => {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  };
  write(stampPath(root), JSON.stringify(stamp, null, 2) + '\n');
  write(listingPath(root), listing);
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
  const listing = listingOf(root, files);
  const fingerprint = fingerprintOf(listing);
  const bin = (pkg, file) => join(root, 'node_modules', pkg, file);
  for (const tool of [bin('electron-vite', 'bin/electron-vite.js'), bin('typescript', 'bin/tsc')]) {
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run \`npm install\` in ${root} first`);
  }
  rmSync(listingPath(root), { force: true });
  rmSync(stampPath(root), { force: true });
  if (!keepOld) rmSync(join(root, 'out', 'types'), { recursive: true, force: true }); // tsc never deletes
  await Promise.all([
    runStep(root, [bin('electron-vite', 'bin/electron-vite.js'), 'build', '--logLevel', 'warn'], { LIGHTWORKER_BUILD_KEEP_OLD: keepOld ? '1' : '' }),
    runStep(root, [bin('typescript', 'bin/tsc'), '-p', join(root, 'tsconfig.lib.json')]).then(() => copyHandWrittenDeclarations(root)),
  ]);
  writeStamp(root, { hash, fingerprint, keptOld: keepOld, builtAt: new Date().toISOString() }, listing);
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
