import { AppError } from '../../core/errors.js';
import { spawnProcess } from '../proc/spawner.js';

/** Result of one git invocation that was allowed to fail. */
export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface GitOptions {
  /** Extra environment (e.g. GIT_INDEX_FILE for a scratch index). */
  env?: Record<string, string>;
  /** Bytes fed to stdin. */
  input?: string | Buffer;
  /** Keep trailing whitespace/newlines of stdout (diffs, -z output). */
  raw?: boolean;
  /** Own process group: a Ctrl-C at the terminal (sent to the whole foreground group) does not stop it midway. */
  detached?: boolean;
}

/** The environment every git call starts from: no inherited repository overrides, no prompts. */
function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    // A caller's GIT_DIR / GIT_INDEX_FILE / GIT_WORK_TREE would silently redirect every command.
    if (/^GIT_(DIR|WORK_TREE|INDEX_FILE|COMMON_DIR|OBJECT_DIRECTORY|NAMESPACE|PREFIX)$/.test(k)) continue;
    env[k] = v;
  }
  env.GIT_TERMINAL_PROMPT = '0';
  env.LC_ALL = 'C';
  return { ...env, ...extra };
}

const MAX_OUTPUT = 256 * 1024 * 1024;

/**
 * Run git with an argv array in `cwd`; never throws for a non-zero exit. Plain spawn (no execa: its wrapper
 * cost ~2 ms per call on the leader's event loop and 14 MiB of heap, measured in a 200-task drain, npm run bench), forked by the spawner helper in
 * a leader (platform/proc/spawner.ts).
 */
export function gitTry(cwd: string, args: string[], opts: GitOptions = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new AppError('git_failed', `git ${args[0]} could not run in ${cwd}: ${why}`));
    const { child } = spawnProcess({ command: 'git', args, cwd, env: gitEnv(opts.env), detached: opts.detached ?? false, stdin: opts.input !== undefined, identity: false });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const collect = (into: Buffer[]) => (b: Buffer) => {
      size += b.length;
      if (size > MAX_OUTPUT) child.kill('SIGKILL');
      else into.push(b);
    };
    child.stdout!.on('data', collect(out));
    child.stderr!.on('data', collect(err));
    child.once('error', (e) => fail(e.message));
    if (opts.input !== undefined) {
      child.stdin!.on('error', () => {}); // git may exit before reading all of it; its exit code tells
      child.stdin!.end(opts.input);
    }
    child.once('close', (code, signal) => {
      if (size > MAX_OUTPUT) return fail(`output over ${MAX_OUTPUT} bytes`);
      if (typeof code !== 'number') return fail(`killed by ${signal ?? 'a signal'}`);
      const stdout = Buffer.concat(out).toString('utf8');
      resolve({ exitCode: code, stdout: opts.raw ? stdout : stripFinalNewline(stdout), stderr: stripFinalNewline(Buffer.concat(err).toString('utf8')) });
    });
  });
}

function stripFinalNewline(s: string): string {
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}

/** Run git and return stdout; a non-zero exit becomes AppError('git_failed') naming the command. */
export async function git(cwd: string, args: string[], opts: GitOptions = {}): Promise<string> {
  const r = await gitTry(cwd, args, opts);
  if (r.exitCode !== 0) {
    const why = (r.stderr || r.stdout).trim().split('\n').slice(-3).join(' / ');
    throw new AppError('git_failed', `git ${args.slice(0, 2).join(' ')} failed in ${cwd}: ${why || `exit ${r.exitCode}`}`, {
      exitCode: r.exitCode,
    });
  }
  return r.stdout;
}

/** Run git and return stdout as bytes (blob contents); a non-zero exit becomes AppError('git_failed'). */
export async function gitBytes(cwd: string, args: string[]): Promise<Buffer> {
  const { execa } = await import('execa');
  const r = await execa('git', args, { cwd, env: gitEnv(), extendEnv: false, reject: false, encoding: 'buffer', stripFinalNewline: false, maxBuffer: 1024 * 1024 * 1024 });
  if (r.exitCode !== 0) throw new AppError('git_failed', `git ${args.slice(0, 2).join(' ')} failed in ${cwd}: exit ${r.exitCode ?? '?'}`);
  return Buffer.from(r.stdout as Uint8Array);
}

/** Split NUL-separated output (`-z`). */
export function splitZ(out: string): string[] {
  return out.split('\0').filter((s) => s.length > 0);
}

/** Absolute path of the repository's top level containing `dir`. */
// Where a directory's repository lives does not change while we run; every task asks, so remember it
// (each git spawn blocks the leader's event loop for a few ms).
const rootCache = new Map<string, string>();
const commonDirCache = new Map<string, string>();

export async function repoRoot(dir: string): Promise<string> {
  let root = rootCache.get(dir);
  if (!root) {
    root = await git(dir, ['rev-parse', '--show-toplevel']);
    rootCache.set(dir, root);
  }
  return root;
}

/** Absolute path of the common git dir (shared by all worktrees of the repository). */
export async function commonGitDir(dir: string): Promise<string> {
  let common = commonDirCache.get(dir);
  if (!common) {
    common = await git(dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
    commonDirCache.set(dir, common);
  }
  return common;
}

const gitDirCache = new Map<string, string>();

/** The repository's own git dir (a linked worktree has its own index and HEAD there), remembered as the common one is. */
export async function ownGitDir(repo: string): Promise<string> {
  let dir = gitDirCache.get(repo);
  if (!dir) {
    dir = await git(repo, ['rev-parse', '--absolute-git-dir']);
    gitDirCache.set(repo, dir);
  }
  return dir;
}

/** Commit id of `ref`, or null when it does not resolve. */
export async function resolveCommit(dir: string, ref: string): Promise<string | null> {
  const r = await gitTry(dir, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}
