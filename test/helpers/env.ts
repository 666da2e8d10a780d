import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../main/core/config.js';
import { Engine, type EngineOptions } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand, type CommandContext, type Face } from '../../main/commands/table.js';

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
  /** Write the home's config.toml (what CLI processes read) and load it into this engine too. */
  configure: (toml: string) => void;
  cleanup: () => void;
}

/** A temp home with an open Engine and a git repo beside it. */
export function makeHome(opts: Omit<EngineOptions, 'home'> = {}): TestHome {
  const { dir, cleanup } = tempDir();
  const home = join(dir, 'home');
  const repo = makeRepo(join(dir, 'repo'));
  const engine = new Engine({ ...opts, home });
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
    configure: (toml: string) => {
      writeFileSync(engine.home.config, toml);
      engine.config = loadConfig(engine.home.config);
    },
    cleanup: () => {
      engine.close();
      cleanup();
    },
  };
}
