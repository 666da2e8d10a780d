import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

export interface ConsoleServer {
  url: string;
  home: string;
  repo: string;
  token: string;
  proc: ChildProcess;
  /** Call a command over the API (with the token). */
  call<T = any>(name: string, input?: unknown): Promise<T>;
  commands: Set<string>;
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

export async function startConsole(host = '127.0.0.1'): Promise<ConsoleServer> {
  const root = mkdtempSync(join(tmpdir(), 'lw-e2e-'));
  const home = join(root, 'home');
  const repo = makeRepo(join(root, 'repo'));
  const { proc, output, exited } = runServe(['--host', host, '--port', '0'], { LIGHTWORKER_HOME: home });
  const deadline = Date.now() + 60_000;
  let url = '';
  while (!url) {
    const m = /LightWorker console: (http:\/\/\S+)/.exec(output());
    if (m) url = m[1];
    else if (proc.exitCode !== null) throw new Error(`serve exited early:\n${output()}`);
    else if (Date.now() > deadline) throw new Error(`serve did not print its URL:\n${output()}`);
    else await new Promise((r) => setTimeout(r, 100));
  }
  const html = await (await fetch(url)).text();
  const token = /name="lightworker-token" content="([0-9a-f]+)"/.exec(html)?.[1] ?? '';
  const list = (await (await fetch(`${url}api/commands`)).json()) as { data: { commands: { name: string }[] } };
  const call = async (name: string, input: unknown = {}) => {
    const res = await fetch(`${url}api/commands/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lightworker-token': token },
      body: JSON.stringify(input),
    });
    const body = (await res.json()) as { ok: boolean; data?: unknown; error?: { message: string } };
    if (!body.ok) throw new Error(`${name}: ${body.error?.message}`);
    return body.data as any;
  };
  return {
    url,
    home,
    repo,
    token,
    proc,
    call,
    commands: new Set(list.data.commands.map((c) => c.name)),
    async stop() {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
