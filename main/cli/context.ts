import type { Command } from 'commander';
import { COMMANDS } from '../commands/index.js';
import { runCommand, type CommandContext } from '../commands/table.js';
import { openEngine } from '../app.js';
import type { Engine } from '../engine.js';
import { callerDepth } from '../core/caller-depth.js';

export interface GlobalOptions {
  home?: string;
}

/** Options of the root program (`--home`), from any subcommand. */
export function globals(cmd: Command): GlobalOptions {
  let root = cmd;
  while (root.parent) root = root.parent;
  return root.opts<GlobalOptions>();
}


/** Open the home, run `fn` with a command caller, close. `onOpenError` answers instead when the home cannot be opened. */
export async function withEngine<T>(
  cmd: Command,
  fn: (call: (name: string, input?: unknown) => Promise<any>, ctx: CommandContext) => Promise<T>,
  onOpenError?: (err: unknown) => T,
): Promise<T> {
  let engine: Engine;
  try {
    engine = openEngine({ home: globals(cmd).home });
  } catch (err) {
    if (onOpenError) return onOpenError(err);
    throw err;
  }
  const ctx: CommandContext = { engine, face: 'cli', depth: callerDepth() };
  try {
    // `any`: each call site knows the command's output shape; the table is deliberately untyped by name.
    return await fn((name, input) => runCommand(COMMANDS, ctx, name, input ?? {}) as Promise<any>, ctx);
  } finally {
    engine.close();
  }
}

export function splitList(v: string | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

export function collect(value: string, prev: string[] = []): string[] {
  return [...prev, value];
}
