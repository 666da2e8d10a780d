import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import type { Task } from '../tasks/types.js';
import { findOnPath } from '../workers/which.js';

/** Editors that need the terminal they were started from: started detached they would hang unseen. */
const TERMINAL_EDITORS = new Set(['vi', 'vim', 'nvim', 'view', 'nano', 'pico', 'micro', 'ed', 'joe', 'hx', 'helix', 'kak', 'emacs', 'mg', 'jed']);

export interface EditorLaunch {
  /** What was started: the editor's argv, path included. */
  argv: string[];
  /** The folder opened: the task's worktree while it exists, else its workspace. */
  path: string;
  target: 'worktree' | 'workspace';
  pid: number | null;
}

/**
 * The editor argv for `path`: `[editor] command` (its `{path}` replaced, else the path appended), else
 * `$VISUAL`, else `$EDITOR` (split on spaces — no shell, so no quoting), else `code`. Terminal-only
 * editors are refused with a hint: started without a terminal they would hang unseen.
 */
export function editorArgv(config: Pick<Config, 'editor'>, env: NodeJS.ProcessEnv, path: string): string[] {
  const configured = config.editor.command;
  if (configured) return configured.includes('{path}') ? configured.map((a) => a.replaceAll('{path}', path)) : [...configured, path];
  const fromEnv = (env.VISUAL || env.EDITOR || '').trim();
  const argv = fromEnv ? fromEnv.split(/\s+/) : ['code'];
  const name = basename(argv[0]);
  if (TERMINAL_EDITORS.has(name) && !(name === 'emacs' && !argv.includes('-nw'))) {
    throw new AppError('invalid_input', `editor "${fromEnv}" (from ${env.VISUAL ? '$VISUAL' : '$EDITOR'}) runs in a terminal; set [editor] command = ["code", "{path}"] (or another windowed editor) in config.toml`, { field: 'editor.command' });
  }
  return [...argv, path];
}

/** The folder to open for `task`: its worktree while it exists (under review), else its workspace. */
export function editorTarget(task: Task): { path: string; target: 'worktree' | 'workspace' } {
  if (task.worktreePath && existsSync(task.worktreePath)) return { path: task.worktreePath, target: 'worktree' };
  return { path: task.workspace, target: 'workspace' };
}

/**
 * Open `task`'s worktree (or workspace) in the user's editor: an argv array, no shell, detached from
 * LightWorker (the editor is the user's program and outlives the console on purpose). Resolves once the
 * process started; a missing executable is an AppError naming it.
 */
export async function openInEditor(config: Pick<Config, 'editor'>, task: Task, env: NodeJS.ProcessEnv = process.env): Promise<EditorLaunch> {
  const { path, target } = editorTarget(task);
  const argv = editorArgv(config, env, path);
  if (!findOnPath(argv[0], env.PATH ?? '')) {
    throw new AppError('worker_missing', `editor "${argv[0]}" is not an executable on PATH; set [editor] command in config.toml, or $VISUAL / $EDITOR`, { field: 'editor.command' });
  }
  const child = spawn(argv[0], argv.slice(1), { cwd: path, env, detached: true, stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (err) => reject(new AppError('worker_missing', `editor "${argv[0]}" did not start: ${err.message}`, { field: 'editor.command' })));
  });
  child.unref();
  return { argv, path, target, pid: child.pid ?? null };
}
