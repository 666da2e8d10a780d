import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { RequestError } from '@agentclientprotocol/sdk';

/** Whether a folder-relative path matches one of the task's allowed_paths globs (isolation/globs.ts, passed in by the entry). */
export type PathMatcher = (rel: string, globs: readonly string[]) => boolean;

/**
 * The client side of ACP's file-system and terminal methods, served inside the task's boundary only:
 * reads and writes under the session's cwd (symlinks resolved, so a link out of it is outside), writes
 * never in a read-only turn nor outside allowed_paths, terminals started in the cwd. Every refusal is
 * thrown as an error the agent sees and reported through `onRefused`, so the task's log records it.
 */
export class Boundary {
  readonly root: string;
  readonly #terminals = new Map<string, Terminal>();
  #next = 0;

  constructor(
    cwd: string,
    readonly readOnly: boolean,
    readonly allowedPaths: string[],
    readonly env: Record<string, string>,
    readonly onRefused: (what: string, why: string) => void,
    readonly matchAny: PathMatcher,
  ) {
    this.root = realpathSync(cwd);
  }

  /** The real path of `path` (its nearest existing ancestor resolved), or a refusal when it lies outside the root. */
  #inside(path: string, what: string): string {
    if (!isAbsolute(path)) this.#refuse(what, `${path} is not an absolute path`);
    let probe = resolve(path);
    const rest: string[] = [];
    while (!existsSync(probe) && dirname(probe) !== probe) {
      rest.unshift(probe.slice(dirname(probe).length + 1));
      probe = dirname(probe);
    }
    const real = resolve(realpathSync(probe), ...rest);
    const rel = relative(this.root, real);
    if (rel.startsWith('..') || isAbsolute(rel)) this.#refuse(what, `${path} is outside the task's folder ${this.root}`);
    return real;
  }

  #refuse(what: string, why: string): never {
    this.onRefused(what, why);
    // The message is what the agent (and its model) reads; a generic JSON-RPC error would say only "Internal error".
    throw new RequestError(-32603, `LightWorker refused ${what}: ${why}`);
  }

  readTextFile(p: { path: string; line?: number | null; limit?: number | null }): { content: string } {
    const file = this.#inside(p.path, `reading ${p.path}`);
    // ACP's "Resource not found": agents check for a file before they create it.
    if (!existsSync(file)) throw new RequestError(-32002, `Resource not found: ${p.path} (ENOENT)`, { uri: p.path });
    let content: string;
    try {
      content = readFileSync(file, 'utf8');
    } catch (err) {
      throw new RequestError(-32603, `cannot read ${p.path}: ${(err as Error).message}`);
    }
    if (p.line || p.limit) {
      const lines = content.split('\n');
      const start = Math.max(0, (p.line ?? 1) - 1);
      content = lines.slice(start, p.limit ? start + p.limit : undefined).join('\n');
    }
    return { content };
  }

  writeTextFile(p: { path: string; content: string }): Record<string, never> {
    const what = `writing ${p.path}`;
    if (this.readOnly) this.#refuse(what, 'this task is read-only');
    const file = this.#inside(p.path, what);
    const rel = relative(this.root, file);
    if (this.allowedPaths.length && !this.matchAny(rel, this.allowedPaths)) this.#refuse(what, `${rel} is outside allowed_paths`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, p.content);
    return {};
  }

  createTerminal(p: { command: string; args?: string[]; cwd?: string | null; env?: { name: string; value: string }[]; outputByteLimit?: number | null }): { terminalId: string } {
    const cwd = p.cwd ? this.#inside(p.cwd, `a terminal in ${p.cwd}`) : this.root;
    const env = { ...this.env };
    for (const v of p.env ?? []) env[v.name] = v.value;
    // No shell: the agent's command and arguments are passed as they are, never joined into a string.
    const child = spawn(p.command, p.args ?? [], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const id = `term-${++this.#next}`;
    this.#terminals.set(id, new Terminal(child, p.outputByteLimit ?? 1024 * 1024));
    return { terminalId: id };
  }

  terminal(id: string): Terminal {
    const t = this.#terminals.get(id);
    if (!t) throw new Error(`no terminal ${id}`);
    return t;
  }

  releaseTerminal(id: string): Record<string, never> {
    this.terminal(id).kill();
    this.#terminals.delete(id);
    return {};
  }

  /** Ends every terminal still running (the turn is over). */
  close(): void {
    for (const t of this.#terminals.values()) t.kill();
    this.#terminals.clear();
  }
}

class Terminal {
  output = '';
  truncated = false;
  exit: { exitCode: number | null; signal: string | null } | null = null;
  readonly #done: Promise<void>;

  constructor(readonly child: ChildProcess, readonly limit: number) {
    const take = (b: Buffer) => {
      this.output += b.toString('utf8');
      if (Buffer.byteLength(this.output) > limit) {
        this.output = this.output.slice(-limit);
        this.truncated = true;
      }
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    this.#done = new Promise((res) => {
      child.on('error', (err) => {
        this.output += String(err.message);
        this.exit = { exitCode: 127, signal: null };
        res();
      });
      child.on('close', (code, signal) => {
        this.exit ??= { exitCode: code, signal };
        res();
      });
    });
  }

  snapshot(): { output: string; truncated: boolean; exitStatus: { exitCode: number | null; signal: string | null } | null } {
    return { output: this.output, truncated: this.truncated, exitStatus: this.exit };
  }

  async waitForExit(): Promise<{ exitCode: number | null; signal: string | null }> {
    await this.#done;
    return this.exit!;
  }

  kill(): void {
    if (!this.exit) this.child.kill('SIGKILL');
  }
}
