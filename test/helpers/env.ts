import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseConfig } from '../../main/core/config.js';
import { Engine, type EngineOptions } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand, type CommandContext, type Face } from '../../main/commands/table.js';
import { storeConfigFor } from './postgres.js';
import { openDb, type Db } from '../../main/store/db.js';
import { openPgDb, storeTarget } from '../../main/store/pg/open.js';

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = 'lw-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A real git repository with one commit (README.md). */
export function makeRepo(dir: string, files: Record<string, string> = { 'README.md': '# test repo\n' }): string {
  mkdirSync(dir, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'test@example.com');
  git('config', 'user.name', 'Test');
  git('config', 'commit.gpgsign', 'false');
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), body);
  }
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

export interface TestHome {
  root: string;
  home: string;
  repo: string;
  engine: Engine;
  call: (name: string, input?: unknown, face?: Face) => Promise<any>;
  /** Another connection to this home's store (SQLite file or PostgreSQL schema), as another process has. */
  connect: () => Db;
  /** Write the home's config.toml (what CLI processes read) and load it into this engine too. */
  configure: (toml: string) => void;
  cleanup: () => void;
}

/**
 * In the `postgres` test project (vitest.config.ts) every home's config.toml points at the test server
 * with a schema of its own; elsewhere this is empty and homes use their SQLite file.
 */
export function storeToml(): string {
  if (process.env.LIGHTWORKER_TEST_STORE !== 'postgres') return '';
  const url = process.env.LIGHTWORKER_TEST_PG_URL;
  if (!url) throw new Error(`no test PostgreSQL: ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'test/postgres-setup.ts did not run'}`);
  return storeConfigFor(url);
}

/**
 * Point a home made without `makeHome` at the test store: in the `postgres` project its config.toml gets
 * a `[store]` block of its own (returned, to keep when the test rewrites the file); elsewhere nothing.
 */
export function withTestStore(home: string, toml = ''): string {
  const store = storeToml();
  if (store || toml) {
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.toml'), store ? `${toml}\n${store}` : toml);
  }
  return store;
}

/** A temp home with an open Engine and a git repo beside it. */
export function makeHome(opts: Omit<EngineOptions, 'home'> = {}): TestHome {
  const { dir, cleanup } = tempDir();
  const home = join(dir, 'home');
  const repo = makeRepo(join(dir, 'repo'));
  const store = withTestStore(home);
  // A pinned config (tests that pass one) keeps the home's store.
  const config = store && opts.config ? { ...opts.config, store: loadConfig(join(home, 'config.toml')).store } : opts.config;
  const engine = new Engine({ ...opts, config, home });
  const call = (name: string, input: unknown = {}, face: Face = 'cli') => {
    const ctx: CommandContext = { engine, face, depth: 0 };
    return runCommand(COMMANDS, ctx, name, input) as Promise<any>;
  };
  return {
    root: dir,
    home,
    repo,
    engine,
    call,
    connect: () => {
      const target = storeTarget(engine.config);
      return target ? openPgDb(target, engine.home.root) : openDb({ path: engine.home.db });
    },
    configure: (toml: string) => {
      writeFileSync(engine.home.config, store ? `${toml}\n${store}` : toml);
      engine.config = loadConfig(engine.home.config);
    },
    cleanup: () => {
      engine.close();
      cleanup();
    },
  };
}

/**
 * A temp home whose engine and config.toml (what CLI processes read) both route gateway `fake` to the
 * scripted model gateway at `gatewayUrl`, its key in `keyEnv`, with a short kill grace.
 */
export function makeGatewayHome(gatewayUrl: string, keyEnv: string): TestHome {
  const h = makeHome({ config: parseConfig({ gateways: { fake: { base_url: `${gatewayUrl}/v1`, key_env: keyEnv } }, scheduler: { kill_grace_ms: 500 } }) });
  h.configure(`[gateways.fake]\nbase_url = "${gatewayUrl}/v1"\nkey_env = "${keyEnv}"\n[scheduler]\nkill_grace_ms = 500\n`);
  return h;
}
