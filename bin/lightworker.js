#!/usr/bin/env node
// The `lightworker` command: runs the built bundle (out/main/cli.cjs; out/main/cli.js for a build without it).
// In a source checkout a stale bundle (sources changed since it was built) is rebuilt first, never run; an
// installed package ships no sources and runs its bundle as is.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';

const root = new URL('../', import.meta.url);
const args = process.argv.slice(2);
// Before anything grows the heap; the flags are part of the code cache's name (flagsTag).
if (args[0] === 'mcp') for (const flag of mcpV8Flags()) v8.setFlagsFromString(flag);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Answered without loading the engine: scripts and MCP clients probe this often.
  process.stdout.write(`${JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version}\n`);
} else {
  // One stat walk compared with the listing the build recorded answers "current" (build-sources.js);
  // anything else is decided by build-state.js, which rebuilds a stale bundle.
  if (existsSync(new URL('main/', root)) && !process.env.LIGHTWORKER_NO_BUILD_CHECK && !(await import('../scripts/build-sources.js')).builtAtAGlance(fileURLToPath(root))) {
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
  return join(cacheDir, `${buildPrefixOf(bundle)}${process.versions.v8}-${process.arch}${flagsTag()}.bin`);
}

function buildPrefixOf(bundle) {
  const st = statSync(bundle);
  return `cli-${st.size}-${Math.trunc(st.mtimeMs)}-`;
}

/**
 * V8 refuses a cache made under other flags (a leader runs with LEADER_V8_FLAGS, scheduler/background.ts): one
 * cache per set of Node flags, or a leader and the next CLI call would each reject and rewrite the other's.
 */
function flagsTag() {
  const flags = args[0] === 'mcp' ? [...process.execArgv, ...mcpV8Flags()] : process.execArgv;
  if (!flags.length) return '';
  // FNV-1a: loading node:crypto for this would cost every start more than the hash is worth.
  let h = 0x811c9dc5;
  for (const c of flags.join('\0')) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return `-${h.toString(16).padStart(8, '0')}`;
}

/** Save the cache (whole file, then rename: parallel runs may race) and drop other builds' caches. */
function writeCache(script, file, bundle) {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, script.createCachedData());
    renameSync(tmp, file);
    const current = buildPrefixOf(bundle);
    for (const old of readdirSync(dirname(file))) {
      if (old.startsWith('cli-') && !old.startsWith(current) && !old.endsWith('.tmp')) rmSync(join(dirname(file), old), { force: true });
    }
  } catch {
    // A read-only install runs without a cache: slower, never wrong.
  }
}

/**
 * V8 flags an MCP server sets itself first thing (its client starts it: the server has no say in Node's
 * command line). A hundred of them may idle at once, each mostly waiting on stdin: no optimizing compiler
 * (its code in the node binary stays untouched): RSS 66.6 MiB instead of 70.9 (measured: the many-clients
 * chaos scenario's RSS per server). `--max-semi-space-size` set here, after the ES module loader ran, did
 * not shrink the young generation (still 8 MiB resident), so it is not set.
 */
function mcpV8Flags() {
  return ['--no-opt'];
}

/** Run `bundle` as the main CommonJS module, compiled from (and, when missing or refused, into) the cache. */
function runCached(bundle, cacheDir) {
  // Wrapped as bytes, decoded once: a 1.6 MB string goes straight to V8's old generation, so concatenating
  // two (the file, then Module.wrap's copy) left one as garbage until a major GC, which a leader may not run
  // for its whole life (+1.6 MiB peak heap, issue 13). A Buffer's memory goes with the next minor GC.
  const [head, tail] = Module.wrap('\0').split('\0');
  const source = Buffer.concat([Buffer.from(head), readFileSync(bundle), Buffer.from(tail)]).toString('utf8');
  let cacheFile;
  let cachedData;
  try {
    cacheFile = cacheFileOf(bundle, cacheDir);
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(source, {
    filename: bundle,
    cachedData,
    // The bundle's one import() (`vite`, when `serve` finds no built console: rare, as a checkout builds it
    // first) loads through Node's own loader; Node 20 calls that experimental and warns once if it happens.
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cacheFile && (!cachedData || script.cachedDataRejected)) process.once('exit', () => writeCache(script, cacheFile, bundle));
  const mod = new Module(bundle, null);
  mod.filename = bundle;
  mod.paths = Module._nodeModulePaths(dirname(bundle));
  const require = createRequire(bundle);
  script.runInThisContext()(mod.exports, require, mod, bundle, dirname(bundle));
  mod.loaded = true;
}
