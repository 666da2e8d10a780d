import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { cmdlinesSeenByNobody, nobodyUnavailable, readableByNobody } from '../helpers/as-nobody.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';

/**
 * A home is private to its owner: another local user (uid nobody) can read none of its files while a
 * task runs, nor the task's objective (with the secret in it) from any process's command line.
 */
const why = nobodyUnavailable();
const T = 120_000;
const MARKER = `objective-marker-${process.pid}-${Date.now()}`;
const SECRET = `sk-proj-${'Zq7'.repeat(11)}Xw`;
const OBJECTIVE = `Write out.txt. ${MARKER}. Use the key ${SECRET} for the staging API.`;

/** A linked agent that records the prompt it got (stdin or a file), then waits for `go` before it answers. */
const AGENT = `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const [control, mode, file] = process.argv.slice(2);
const prompt = mode === 'file' ? readFileSync(file, 'utf8') : readFileSync(0, 'utf8');
writeFileSync(join(control, 'prompt-' + process.pid + '.txt'), prompt);
writeFileSync(join(control, 'started'), String(process.pid));
while (!existsSync(join(control, 'go'))) {
  if (!existsSync(control)) process.exit(3);
  await new Promise((r) => setTimeout(r, 20));
}
writeFileSync('out.txt', 'written\\n');
console.log(JSON.stringify({ summary: 'wrote out.txt', files_changed: ['out.txt'], notes: null }));
`;

interface Bench {
  dir: string;
  home: string;
  repo: string;
  control: string;
  agent: string;
  engine: Engine;
  call: (name: string, input: unknown) => Promise<any>;
}

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.reverse()) c();
  cleanups = [];
});

function bench(): Bench {
  const t = tempDir('lw-private-');
  // The folder above the home is open to everyone, as ~/.local/state is: only the home's own modes protect it.
  chmodSync(t.dir, 0o755);
  const repo = makeRepo(join(t.dir, 'repo'));
  const control = join(t.dir, 'control');
  mkdirSync(control);
  const agent = join(t.dir, 'agent.mjs');
  writeFileSync(agent, AGENT);
  const home = join(t.dir, 'home');
  const engine = new Engine({ home });
  cleanups.push(() => {
    engine.close();
    t.cleanup();
  });
  const call = (name: string, input: unknown) => runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, name, input) as Promise<any>;
  return { dir: t.dir, home, repo, control, agent, engine, call };
}

/** Every path under `root`, without descending into the working trees (the user's own files). */
function walk(root: string, into = (rel: string) => !/^(worktrees|snapshots)\/[^/]+\//.test(rel)): string[] {
  const out: string[] = [root];
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      out.push(path);
      if (lstatSync(path).isDirectory() && into(relative(root, path) + '/')) visit(path);
    }
  };
  visit(root);
  return out;
}

/** Entries LightWorker made that others could read (the working trees keep git's modes: the closed folder above them guards them). */
const openToOthers = (paths: string[], root: string) =>
  paths
    .filter((p) => !/^(worktrees|snapshots)\/[^/]+$/.test(relative(root, p)))
    .filter((p) => !lstatSync(p).isSymbolicLink() && (statSync(p).mode & 0o077) !== 0).map((p) => `${relative(root, p) || '.'} ${(statSync(p).mode & 0o777).toString(8)}`);

async function waitFor(cond: () => boolean, what: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Run one task of `worker` to its end, checking what another user sees while its worker runs. */
async function runWatched(b: Bench, worker: string): Promise<{ id: string; run: CliResult; seen: { readable: string[]; open: string[]; leaks: string[]; agentSeen: boolean } }> {
  const { task } = await b.call('delegate_task', {
    objective: OBJECTIVE, kind: 'execute', workspace: b.repo, worker, mode: 'auto_execute',
    verify: [[process.execPath, '-e', "require('fs').accessSync('out.txt')"]],
  });
  const running = runCli(['run', '--until-idle', '--timeout', '90'], { home: b.home, timeoutMs: T });
  await waitFor(() => existsSync(join(b.control, 'started')), 'the linked agent to start');
  const paths = walk(b.home);
  const cmdlines = cmdlinesSeenByNobody();
  const seen = {
    readable: readableByNobody(walk(b.home, () => true)).map((p) => relative(b.home, p) || '.'),
    open: openToOthers(paths, b.home),
    leaks: cmdlines.filter((c) => c.cmdline.includes(MARKER) || c.cmdline.includes(SECRET)).map((c) => `${c.pid}: ${c.cmdline.slice(0, 300)}`),
    agentSeen: cmdlines.some((c) => c.cmdline.includes(b.agent)),
  };
  writeFileSync(join(b.control, 'go'), '');
  const run = await running;
  // After the end too: its diff, verify log and raw output are written by then.
  const artifacts = readdirSync(join(b.home, 'artifacts', task.id as string));
  expect(artifacts).toEqual(expect.arrayContaining(['attempt-1', 'diff-1.patch', 'verify-1-1.log']));
  expect(openToOthers(walk(b.home), b.home)).toEqual([]);
  expect(readableByNobody(walk(b.home, () => true))).toEqual([]);
  return { id: task.id as string, run, seen };
}

describe.skipIf(why !== null)('a home and its tasks are private to their owner (as uid nobody)', () => {
  for (const [name, template] of [
    ['the prompt on stdin', (b: Bench) => [process.execPath, b.agent, b.control, 'stdin']],
    ['the prompt in a {prompt_file}', (b: Bench) => [process.execPath, b.agent, b.control, 'file', '{prompt_file}']],
  ] as const) {
    it(`a linked CLI with ${name}: nobody reads the home's files or the objective in any command line`, { timeout: T }, async () => {
      const b = bench();
      const linked = await b.call('link_worker', { name: 'agent', command_json: template(b) });
      expect(linked.warning).toBeUndefined();
      const { id, run, seen } = await runWatched(b, 'agent');
      expect(run.code, run.stderr).toBe(0);
      expect(seen.agentSeen, 'the scan saw the running agent').toBe(true);
      expect(seen.leaks).toEqual([]);
      expect(seen.readable).toEqual([]);
      expect(seen.open).toEqual([]);
      const t = requireTask(b.engine.db, id);
      expect(t.status, JSON.stringify(t.error)).toBe('completed');
      const got = readdirSync(b.control).filter((f) => f.startsWith('prompt-')).map((f) => readFileSync(join(b.control, f), 'utf8'));
      expect(got.length).toBe(1);
      expect(got[0]).toContain(MARKER);
      expect(got[0]).toContain(SECRET);
      if (template(b).includes('{prompt_file}')) {
        const file = join(b.home, 'artifacts', id, 'attempt-1', 'linked-prompt.txt');
        expect(statSync(file).mode & 0o777).toBe(0o600);
      }
    });
  }

  it('a link that puts {prompt} in argv still runs, and says at link time and on every turn that others can read it; the home stays private', { timeout: T }, async () => {
    const b = bench();
    const linked = await b.call('link_worker', { name: 'argv', command_json: [process.execPath, b.agent, b.control, 'file', '{prompt}'] });
    expect(linked.warning).toMatch(/argv gets the prompt .* every local user can read/);
    // The agent reads a file named by its argument: here that argument is the prompt, which is no file.
    writeFileSync(b.agent, AGENT.replace("readFileSync(file, 'utf8')", 'file'));
    const { id, seen } = await runWatched(b, 'argv');
    expect(seen.leaks.length).toBeGreaterThan(0);
    expect(seen.readable).toEqual([]);
    expect(seen.open).toEqual([]);
    const warnings = listEvents(b.engine.db, { taskId: id, types: ['worker.warning'] }).events.map((e) => e.payload.message);
    expect(warnings).toEqual([expect.stringMatching(/every local user can read \(ps, \/proc\/<pid>\/cmdline\)/)]);
    expect(requireTask(b.engine.db, id).status).toBe('completed');
  });

  it('an existing home readable by others is made private on open, said once', { timeout: T }, async () => {
    const b = bench();
    b.engine.close();
    const art = join(b.home, 'artifacts', 'T1', 'attempt-1');
    mkdirSync(art, { recursive: true, mode: 0o755 });
    writeFileSync(join(art, 'stdout.jsonl'), `{"objective":"${MARKER}"}\n`, { mode: 0o644 });
    writeFileSync(join(b.home, 'logs', 'runner.log'), 'log\n', { mode: 0o644 });
    writeFileSync(join(b.home, 'config.toml'), '', { mode: 0o644 });
    mkdirSync(join(b.home, 'worktrees', 'T1'), { recursive: true });
    writeFileSync(join(b.home, 'worktrees', 'T1', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    for (const p of walk(b.home)) chmodSync(p, lstatSync(p).isDirectory() ? 0o755 : (statSync(p).mode & 0o111) ? 0o755 : 0o644);
    expect(readableByNobody([join(art, 'stdout.jsonl'), join(b.home, 'lightworker.db')]).length).toBe(2);

    const first = await runCli(['status', '--json'], { home: b.home });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(new RegExp(`${b.home.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} was readable by other local users; made it private \\(folders 0700, files 0600: \\d+ entries\\)`));
    expect(openToOthers(walk(b.home), b.home)).toEqual([]);
    expect(readableByNobody(walk(b.home, () => true))).toEqual([]);
    // A working tree keeps its modes (the closed folder above it keeps it private).
    expect(statSync(join(b.home, 'worktrees', 'T1', 'run.sh')).mode & 0o777).toBe(0o755);
    const second = await runCli(['status', '--json'], { home: b.home });
    expect(second.stderr).not.toMatch(/made it private/);
  });
});

describe('a folder that is not a home', () => {
  it('is refused before anything in it changes: no file of it made private, nothing of a home written', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const project = join(dir, 'project');
      mkdirSync(join(project, 'src'), { recursive: true, mode: 0o755 });
      writeFileSync(join(project, 'notes.txt'), 'mine\n', { mode: 0o644 });
      writeFileSync(join(project, 'src', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
      chmodSync(project, 0o755);
      const modes = () =>
        walk(project, () => true)
          .map((p) => `${relative(project, p)} ${(lstatSync(p).mode & 0o777).toString(8)}`)
          .sort();
      const before = modes();
      const r = await runCli(['status', '--json'], { home: project });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/is not a LightWorker home: it already holds notes\.txt, src\. A home must be a folder of its own/);
      expect(r.stderr).toContain('Nothing was changed');
      expect(modes()).toEqual(before);
      expect(lstatSync(project).mode & 0o777).toBe(0o755);
      expect(readdirSync(project).sort()).toEqual(['notes.txt', 'src']);
      // A folder holding only dot files is a new home like an empty one.
      const fresh = join(dir, 'fresh');
      mkdirSync(fresh);
      writeFileSync(join(fresh, '.gitkeep'), '');
      const ok = await runCli(['status', '--json'], { home: fresh });
      expect(ok.code, ok.stderr).toBe(0);
      expect(existsSync(join(fresh, 'lightworker.db'))).toBe(true);
    } finally {
      cleanup();
    }
  });

  it.skipIf(process.getuid?.() !== 0)('an entry another user owns in an open home keeps its mode (root could change it, LightWorker never made it)', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const home = join(dir, 'home');
      expect((await runCli(['status', '--json'], { home })).code).toBe(0);
      const theirs = join(home, 'logs', 'theirs.txt');
      writeFileSync(theirs, 'not mine\n', { mode: 0o644 });
      chownSync(theirs, 65534, 65534);
      chmodSync(theirs, 0o644);
      chmodSync(home, 0o755);
      const r = await runCli(['status', '--json'], { home });
      expect(r.stderr).toMatch(/made it private/);
      expect(lstatSync(home).mode & 0o777).toBe(0o700);
      expect(lstatSync(theirs).mode & 0o777).toBe(0o644);
    } finally {
      cleanup();
    }
  });
});
