import { spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';

/**
 * `lightworker serve` is reachable by every local user (loopback is shared): only the user who started it
 * may see or change anything. The secret travels in the printed URL, a browser trades it for an
 * HttpOnly SameSite=Strict cookie, scripts send it as a Bearer token. Nothing else gets in.
 */

interface Serve {
  proc: ChildProcess;
  base: string;
  loginUrl: string;
  token: string;
  output: () => string;
}

async function startServe(home: string, args: string[] = ['--no-open'], env: Record<string, string> = {}): Promise<Serve> {
  const proc = startCli(['serve', '--port', '0', ...args], { home, env });
  let text = '';
  proc.stdout!.on('data', (d) => (text += String(d)));
  proc.stderr!.on('data', (d) => (text += String(d)));
  let loginUrl = '';
  await until(
    () => {
      if (proc.exitCode !== null) throw new Error(`serve exited early:\n${text}`);
      loginUrl = /LightWorker console: (http:\/\/\S+)/.exec(text)?.[1] ?? '';
      return loginUrl !== '';
    },
    60_000,
    'serve to print its URL',
  );
  const u = new URL(loginUrl);
  return { proc, loginUrl, base: `${u.origin}/`, token: u.searchParams.get('token') ?? '', output: () => text };
}

async function stopServe(s: Serve | undefined): Promise<void> {
  if (!s || s.proc.exitCode !== null) return;
  s.proc.kill('SIGTERM');
  const t = setTimeout(() => s.proc.kill('SIGKILL'), 10_000);
  await exited(s.proc);
  clearTimeout(t);
}

/** A request with whatever credentials; `text` is the body (SSE: only the first chunk). */
async function hit(s: Serve, path: string, init: RequestInit = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const ctrl = new AbortController();
  const res = await fetch(new URL(path, s.base), { redirect: 'manual', ...init, signal: ctrl.signal });
  let text: string;
  if (res.headers.get('content-type')?.includes('event-stream')) {
    const chunk = await res.body!.getReader().read();
    text = new TextDecoder().decode(chunk.value);
    ctrl.abort();
  } else text = await res.text();
  return { status: res.status, text, headers: res.headers };
}

const bearer = (s: Serve) => ({ authorization: `Bearer ${s.token}` });

async function bearerCall(s: Serve, name: string, input: unknown = {}): Promise<any> {
  const r = await hit(s, `api/commands/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(s) }, body: JSON.stringify(input) });
  const body = JSON.parse(r.text);
  if (!body.ok) throw new Error(`${name}: ${r.status} ${r.text}`);
  return body.data;
}

/** Sign in like a browser: open the printed URL, keep the cookie it sets. */
async function signIn(s: Serve): Promise<{ cookie: string; setCookie: string }> {
  const r = await hit(s, s.loginUrl);
  expect(r.status).toBe(303);
  const setCookie = r.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0], setCookie };
}

let t: ReturnType<typeof tempDir>;
let home: string;
let repo: string;
let serve: Serve;

beforeAll(async () => {
  t = tempDir('lw-http-auth-');
  home = join(t.dir, 'home');
  repo = makeRepo(join(t.dir, 'repo'));
  serve = await startServe(home);
});
afterAll(async () => {
  await stopServe(serve);
  t.cleanup();
});

describe('serve without the secret', () => {
  it('prints a URL carrying a 32-byte token', () => {
    expect(serve.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses the page, every API read, the event stream and writes, and gives no secret away', async () => {
    const names: string[] = (await (await fetch(`${serve.base}api/commands`, { headers: bearer(serve) })).json()).data.commands.map((c: { name: string }) => c.name);
    expect(names).toContain('list_tasks');
    const replies = [
      { what: 'GET /', ...(await hit(serve, '/')) },
      { what: 'GET /index.html', ...(await hit(serve, '/index.html')) },
      { what: 'GET /#/tasks (an app route)', ...(await hit(serve, '/tasks')) },
      { what: 'GET /api/commands', ...(await hit(serve, 'api/commands')) },
      { what: 'GET /api/session', ...(await hit(serve, 'api/session')) },
      { what: 'GET /api/events', ...(await hit(serve, 'api/events')) },
      { what: 'GET /api/events?cursor=0', ...(await hit(serve, 'api/events?cursor=0')) },
    ];
    for (const name of names) {
      replies.push({ what: `POST ${name}`, ...(await hit(serve, `api/commands/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-lightworker-csrf': '1' }, body: '{}' })) });
    }
    const assets = readdirSync(join(fileURLToPath(new URL('../../out/renderer/assets', import.meta.url))));
    for (const a of assets) replies.push({ what: `GET /assets/${a}`, ...(await hit(serve, `assets/${a}`)) });
    for (const r of replies) {
      expect(r.status, r.what).toBe(401);
      expect(r.text, r.what).not.toContain(serve.token);
      expect(r.headers.get('set-cookie'), r.what).toBeNull();
    }
    expect(replies[0].text).toContain('open the URL printed by <code>lightworker serve</code>');
    expect(replies[0].text).not.toMatch(/<script|lightworker-token/);
    expect(JSON.parse(replies[3].text).error.message).toContain('open the URL printed by `lightworker serve`');
    // Nothing was created by the refused writes.
    expect((await bearerCall(serve, 'list_tasks')).tasks).toEqual([]);
  });

  it('a wrong token, a wrong cookie or a wrong Bearer gets nothing', async () => {
    const wrongLogin = await hit(serve, `/?token=${'A'.repeat(43)}`);
    expect(wrongLogin.status).toBe(403);
    expect(wrongLogin.headers.get('set-cookie')).toBeNull();
    expect(wrongLogin.text).toContain('open the URL printed by');
    expect((await hit(serve, '/login')).status).toBe(401);
    const port = new URL(serve.base).port;
    expect((await hit(serve, 'api/commands', { headers: { cookie: `lightworker_session_${port}=${serve.token}` } })).status).toBe(401);
    expect((await hit(serve, 'api/commands', { headers: { cookie: `lightworker_session_${port}=${'x'.repeat(43)}` } })).status).toBe(401);
    expect((await hit(serve, 'api/commands', { headers: { authorization: `Bearer ${serve.token}x` } })).status).toBe(401);
    expect((await hit(serve, 'api/commands', { headers: { 'x-lightworker-token': serve.token } })).status).toBe(401);
  });
});

describe('serve with the printed URL', () => {
  it('sets an HttpOnly SameSite=Strict session cookie and sends the browser to / without the token', async () => {
    const r = await hit(serve, serve.loginUrl);
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/');
    const setCookie = r.headers.get('set-cookie') ?? '';
    const attrs = setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs).toContain('httponly');
    expect(attrs).toContain('samesite=strict');
    expect(attrs).toContain('path=/');
    expect(attrs).not.toContain('secure'); // plain http on loopback: a Secure cookie would be dropped
    expect(setCookie).not.toContain(serve.token);
    // /login?token= works the same way.
    expect((await hit(serve, `login?token=${encodeURIComponent(serve.token)}`)).status).toBe(303);
  });

  it('with the cookie: the page, reads, the event stream and writes work; the page holds no secret', async () => {
    const { cookie } = await signIn(serve);
    const page = await hit(serve, '/', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<div id="app">');
    expect(page.text).not.toContain(serve.token);
    expect(page.text).not.toContain(cookie.split('=')[1]);
    expect((await hit(serve, 'api/commands', { headers: { cookie } })).status).toBe(200);
    const sse = await hit(serve, 'api/events', { headers: { cookie } });
    expect(sse.status).toBe(200);
    expect(sse.text).toContain('event: hello');
    const post = (headers: Record<string, string>) =>
      hit(serve, 'api/commands/delegate_task', {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, ...headers },
        body: JSON.stringify({ objective: 'from a signed-in browser', workspace: repo, mode: 'plan_only' }),
      });
    // The cookie alone is not enough to write: a cross-site form could send it. The console adds a header.
    expect((await post({})).status).toBe(403);
    expect((await post({ 'x-lightworker-csrf': '1', origin: 'http://127.0.0.1:1' })).status).toBe(403);
    const ok = await post({ 'x-lightworker-csrf': '1', origin: new URL(serve.base).origin });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).data.task.status).toBe('awaiting_approval');
  });

  it('a Bearer token works for scripts, without cookie or CSRF header', async () => {
    const { task } = await bearerCall(serve, 'delegate_task', { objective: 'from a script', workspace: repo, mode: 'plan_only' });
    expect((await bearerCall(serve, 'get_task', { id: task.id })).task.objective).toBe('from a script');
    const sse = await hit(serve, 'api/events?cursor=0', { headers: bearer(serve) });
    expect(sse.status).toBe(200);
  });

  it('after a restart the old cookie and token are refused', async () => {
    const { cookie } = await signIn(serve);
    const port = new URL(serve.base).port;
    const old = serve;
    await stopServe(old);
    serve = await startServe(home, ['--no-open', '--port', port]);
    expect(serve.token).not.toBe(old.token);
    expect((await hit(serve, 'api/session', { headers: { cookie } })).status).toBe(401);
    expect((await hit(serve, 'api/commands', { headers: bearer(old) })).status).toBe(401);
    expect((await hit(serve, old.loginUrl)).status).toBe(403);
    const fresh = await signIn(serve);
    expect((await hit(serve, 'api/session', { headers: { cookie: fresh.cookie } })).status).toBe(200);
  });
});

/** How to run a command as uid/gid 65534, or why we cannot. */
function asNobody(): { prefix: string[] } | { why: string } {
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
  const tool = has('setpriv') ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : has('runuser') ? ['runuser', '-u', 'nobody', '--'] : null;
  if (!tool) return { why: 'neither setpriv nor runuser exists' };
  if (process.getuid?.() === 0) return { prefix: tool };
  if (spawnSync('sudo', ['-n', 'true']).status === 0) return { prefix: ['sudo', '-n', ...tool] };
  return { why: 'switching to uid nobody needs root or passwordless sudo' };
}

describe('another local user (uid nobody)', () => {
  const how = asNobody();
  if ('why' in how) {
    if (process.env.CI === 'true') it('can run as another uid', () => expect.fail(`cannot test as another uid: ${how.why}`));
    else {
      process.stderr.write(`skipping the other-uid console test: ${how.why}\n`);
      it.skip(`as another uid (${how.why})`, () => undefined);
    }
    return;
  }
  const prefix = how.prefix;
  type Report = {
    uid: number;
    candidates: string[];
    procReads: { file: string; read: boolean }[];
    replies: { label: string; status: number; setCookie: string | null; body: string }[];
  };
  let u: ReturnType<typeof tempDir>;
  let s: Serve | undefined;
  let uRepo: string;
  let marker: string;
  let opened: string;
  let client: string;
  let openerPid = 0;

  /** Run the intruder as uid 65534 against `s`; its JSON report. */
  function intrude(): Report {
    const run = spawnSync(prefix[0], [...prefix.slice(1), process.execPath, client, s!.base, uRepo, marker], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Report;
    expect(report.uid).toBe(65534);
    return report;
  }

  beforeAll(async () => {
    // A world-traversable folder: only file modes protect the home, as on a real multi-user machine.
    u = tempDir('lw-http-uid-');
    chmodSync(u.dir, 0o755);
    uRepo = makeRepo(join(u.dir, 'repo'));
    marker = join(u.dir, 'pwned');
    // A stand-in browser opener that stays alive, so its argv is visible in /proc while the intruder looks.
    const bin = join(u.dir, 'bin');
    mkdirSync(bin);
    opened = join(u.dir, 'opened.txt');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\necho "$$ $*" > '${opened}'\nsleep 60\n`, { mode: 0o755 });
    client = join(u.dir, 'intruder.mjs');
    copyFileSync(fileURLToPath(new URL('../fixtures/console-intruder.mjs', import.meta.url)), client);
    chmodSync(client, 0o644);
    s = await startServe(join(u.dir, 'home'), [], { PATH: `${bin}:${process.env.PATH}` });
  });
  afterAll(async () => {
    if (openerPid && isAlive(openerPid)) process.kill(openerPid, 'SIGKILL');
    await stopServe(s);
    u.cleanup();
  });

  it('cannot read anything, sign in, or submit an auto_execute task whose verify command would run as the server user', async () => {
    const report = intrude();
    // Nothing was created, so nothing can ever run the intruder's command.
    expect((await bearerCall(s!, 'list_tasks')).tasks.map((x: { name: string }) => x.name)).not.toContain('intruder task');
    expect(existsSync(marker)).toBe(false);
    expect(report.candidates).not.toContain(s!.token);
    expect(report.replies.filter((r) => r.label.startsWith('POST delegate_task')).length).toBeGreaterThan(0);
    for (const r of report.replies) {
      expect([401, 403], r.label).toContain(r.status);
      expect(r.body, r.label).not.toContain(s!.token);
      expect(r.setCookie, r.label).toBeNull();
    }
  });

  it('opening the browser puts no token on a command line; the redirect page is private and removed on exit', async () => {
    await until(() => existsSync(opened) && readFileSync(opened, 'utf8').includes('file://'), 10_000, 'the browser opener to start');
    const [pid, target] = readFileSync(opened, 'utf8').trim().split(' ');
    openerPid = Number(pid);
    expect(target).not.toContain(s!.token);
    const page = fileURLToPath(target);
    expect(statSync(page).mode & 0o777).toBe(0o600);
    expect(readFileSync(page, 'utf8')).toContain(s!.loginUrl);
    // The intruder sees the opener's argv (the file's path) but cannot read the file.
    const report = intrude();
    expect(report.procReads.find((r) => r.file === page)?.read).toBe(false);
    expect(report.candidates).not.toContain(s!.token);
    await stopServe(s);
    expect(existsSync(page)).toBe(false);
  });
});
