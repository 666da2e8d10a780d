import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface ConsoleServer {
  /** The bare address (`http://127.0.0.1:PORT/`): useless without a session. */
  url: string;
  /** The URL serve printed, carrying the per-start token: opening it signs a browser in. */
  loginUrl: string;
  home: string;
  repo: string;
  token: string;
  proc: ChildProcess;
  /** Call a command over the API (with the token as a Bearer). */
  call<T = any>(name: string, input?: unknown): Promise<T>;
  commands: Set<string>;
  /** Stop serve and start it again on the same home and port: a new token, every old session invalid. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'e2e@example.com');
  git('config', 'user.name', 'E2E');
  git('config', 'commit.gpgsign', 'false');
  writeFileSync(join(dir, 'README.md'), '# e2e repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

/** Run `lightworker serve --port 0` against a temp home; resolves once it printed its URL. */
export function runServe(args: string[], env: NodeJS.ProcessEnv): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [join(ROOT, 'bin', 'lightworker.js'), 'serve', '--no-open', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  proc.stdout!.on('data', (d) => (text += String(d)));
  proc.stderr!.on('data', (d) => (text += String(d)));
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  return { proc, output: () => text, exited };
}

/** Start serve on `home` and wait for the URL it prints (the only place the token appears). */
async function launchServe(home: string, host: string, port: number): Promise<{ proc: ChildProcess; exited: Promise<number | null>; loginUrl: string }> {
  const { proc, output, exited } = runServe(['--host', host, '--port', String(port)], { LIGHTWORKER_HOME: home });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const m = /LightWorker console: (http:\/\/\S+)/.exec(output());
    if (m) return { proc, exited, loginUrl: m[1] };
    if (proc.exitCode !== null) throw new Error(`serve exited early:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`serve did not print its URL:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopProc(proc: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (proc.exitCode !== null) return;
  // serve shuts down gracefully: a first SIGTERM drains running tasks, a second (0.5 s later, so it is
  // not merged with the first) cancels them; SIGKILL only if it still hangs.
  proc.kill('SIGTERM');
  const again = setTimeout(() => proc.kill('SIGTERM'), 700);
  const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(again);
  clearTimeout(t);
}

export async function startConsole(host = '127.0.0.1'): Promise<ConsoleServer> {
  const root = mkdtempSync(join(tmpdir(), 'lw-e2e-'));
  const home = join(root, 'home');
  const repo = makeRepo(join(root, 'repo'));
  let run = await launchServe(home, host, 0);
  const auth = () => ({ authorization: `Bearer ${lw.token}` });
  const call = async (name: string, input: unknown = {}) => {
    const res = await fetch(`${lw.url}api/commands/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth() },
      body: JSON.stringify(input),
    });
    const body = (await res.json()) as { ok: boolean; data?: unknown; error?: { message: string } };
    if (!body.ok) throw new Error(`${name}: ${body.error?.message}`);
    return body.data as any;
  };
  const adopt = (r: typeof run) => {
    run = r;
    const u = new URL(r.loginUrl);
    lw.loginUrl = r.loginUrl;
    lw.url = `${u.origin}/`;
    lw.token = u.searchParams.get('token') ?? '';
    lw.proc = r.proc;
  };
  const lw: ConsoleServer = {
    url: '',
    loginUrl: '',
    home,
    repo,
    token: '',
    proc: run.proc,
    call,
    commands: new Set(),
    async restart() {
      const port = Number(new URL(lw.url).port);
      await stopProc(run.proc, run.exited);
      adopt(await launchServe(home, host, port));
    },
    async stop() {
      await stopProc(run.proc, run.exited);
      rmSync(root, { recursive: true, force: true });
    },
  };
  adopt(run);
  const list = (await (await fetch(`${lw.url}api/commands`, { headers: auth() })).json()) as { data: { commands: { name: string }[] } };
  lw.commands = new Set(list.data.commands.map((c) => c.name));
  return lw;
}
