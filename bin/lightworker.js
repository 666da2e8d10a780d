#!/usr/bin/env node
// The `lightworker` command: runs the built bundle (out/main/cli.cjs; out/main/cli.js for a build without it).
// In a source checkout a stale bundle (sources changed since it was built) is rebuilt first, never run; an
// installed package ships no sources and runs its bundle as is.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const root = new URL('../', import.meta.url);
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Answered without loading the engine: scripts and MCP clients probe this often.
  process.stdout.write(`${JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version}\n`);
} else {
  if (existsSync(new URL('main/', root)) && !process.env.LIGHTWORKER_NO_BUILD_CHECK) {
    const { ensureBuild } = await import('../scripts/build-state.js');
    try {
      await ensureBuild();
    } catch (err) {
      process.stderr.write(`lightworker: cannot build the bundle: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  }
  const bundle = fileURLToPath(new URL('out/main/cli.cjs', root));
  if (existsSync(bundle)) runCached(bundle, fileURLToPath(new URL('out/v8-cache/', root)));
  else await import('../out/main/cli.js');
}

// out/main/cli.cjs runs with V8's code cache, which Node 20 offers only through vm.Script: compiling the
// bundle at every start is most of a short CLI call's time (issue 12). The cache is written at exit (it then
// holds the functions the run compiled too) into a folder of its own (out/v8-cache/, outside the published
// `files`) and read by later runs of the same bundle. Function declarations below are hoisted.

/**
 * The cache file of this bundle under this V8: V8 itself refuses data of another version or other flags,
 * but checks only the source's length, so the name carries the bundle's size and mtime (a rebuild changes
 * them) and a cache never meets another build's code.
 */
function cacheFileOf(bundle, cacheDir) {
  const st = statSync(bundle);
  return join(cacheDir, `cli-${st.size}-${Math.trunc(st.mtimeMs)}-${process.versions.v8}-${process.arch}.bin`);
}

/** Save the cache (whole file, then rename: parallel runs may race) and drop other builds' caches. */
function writeCache(script, file) {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, script.createCachedData());
    renameSync(tmp, file);
    for (const old of readdirSync(dirname(file))) {
      if (old.startsWith('cli-') && join(dirname(file), old) !== file && !old.endsWith('.tmp')) rmSync(join(dirname(file), old), { force: true });
    }
  } catch {
    // A read-only install runs without a cache: slower, never wrong.
  }
}

/** Run `bundle` as the main CommonJS module, compiled from (and, when missing or refused, into) the cache. */
function runCached(bundle, cacheDir) {
  const source = readFileSync(bundle, 'utf8');
  let cacheFile;
  let cachedData;
  try {
    cacheFile = cacheFileOf(bundle, cacheDir);
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(Module.wrap(source), {
    filename: bundle,
    cachedData,
    // The bundle's one import() (`vite`, when `serve` finds no built console: rare, as a checkout builds it
    // first) loads through Node's own loader; Node 20 calls that experimental and warns once if it happens.
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cacheFile && (!cachedData || script.cachedDataRejected)) process.once('exit', () => writeCache(script, cacheFile));
  const mod = new Module(bundle, null);
  mod.filename = bundle;
  mod.paths = Module._nodeModulePaths(dirname(bundle));
  const require = createRequire(bundle);
  script.runInThisContext()(mod.exports, require, mod, bundle, dirname(bundle));
  mod.loaded = true;
}
