/// <reference lib="dom" />
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { runServe, startConsole, type ConsoleServer } from './console-server.js';

/** A raw request, so the Host header can be anything (fetch would not let us set it). */
function raw(url: string, opts: { method?: string; host?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolveReq, rejectReq) => {
    const req = httpRequest(
      { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port, path: u.pathname + u.search, method: opts.method ?? 'GET', headers: { ...(opts.host ? { host: opts.host } : {}), ...opts.headers } },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += String(d)));
        res.on('end', () => resolveReq({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', rejectReq);
    req.end(opts.body);
  });
}

test.describe('serve security', () => {
  let lw: ConsoleServer;
  test.beforeAll(async () => {
    lw = await startConsole();
  });
  test.afterAll(async () => lw.stop());

  test('without the token every request is refused (401) and changes nothing; a wrong Bearer too', async () => {
    const body = JSON.stringify({ objective: 'should not be queued', workspace: lw.repo });
    const none = await raw(`${lw.url}api/commands/delegate_task`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body).error.code).toBe('forbidden');
    const wrong = await raw(`${lw.url}api/commands/delegate_task`, { method: 'POST', headers: { authorization: `Bearer ${'f'.repeat(43)}` }, body });
    expect(wrong.status).toBe(401);
    expect((await lw.call('list_tasks', { search: 'should not be queued' })).tasks).toHaveLength(0);
    // Reads need the token too.
    expect((await raw(`${lw.url}api/commands/list_tasks`, { method: 'POST', body: '{}' })).status).toBe(401);
    expect((await raw(`${lw.url}api/events`, {})).status).toBe(401);
  });

  test('errors map to HTTP statuses', async () => {
    const headers = { authorization: `Bearer ${lw.token}` };
    const bad = await raw(`${lw.url}api/commands/get_task`, { method: 'POST', headers, body: '{"id":"nope"}' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.message).toContain('id');
    const unknown = await raw(`${lw.url}api/commands/no_such_command`, { method: 'POST', headers, body: '{}' });
    expect(unknown.status).toBe(404);
    const missing = await raw(`${lw.url}api/commands/get_task`, { method: 'POST', headers, body: JSON.stringify({ id: '0'.repeat(26) }) });
    expect(missing.status).toBe(404);
  });

  test('a non-loopback Host header is refused; localhost and the literal are accepted', async () => {
    const port = new URL(lw.url).port;
    const headers = { authorization: `Bearer ${lw.token}` };
    expect((await raw(lw.url, { host: `evil.example:${port}`, headers })).status).toBe(421);
    expect((await raw(`${lw.url}api/commands`, { host: `192.168.1.10:${port}`, headers })).status).toBe(421);
    expect((await raw(lw.url, { host: `localhost:${port}`, headers })).status).toBe(200);
    expect((await raw(lw.url, { host: `127.0.0.1:${port}`, headers })).status).toBe(200);
    // A cross-site page cannot drive the API either, whatever it holds.
    const cross = await raw(`${lw.url}api/commands/list_tasks`, { method: 'POST', headers: { origin: 'http://evil.example', ...headers }, body: '{}' });
    expect(cross.status).toBe(403);
  });

  test('the page carries a strict CSP and no secret', async () => {
    const res = await fetch(lw.url, { headers: { authorization: `Bearer ${lw.token}` } });
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const html = await res.text();
    expect(html).toContain('<div id="app">');
    expect(html).not.toContain(lw.token);
    expect(html).not.toContain('lightworker-token');
    const signIn = await fetch(lw.url);
    expect(signIn.status).toBe(401);
    expect(signIn.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  test('server-sent events resume from a cursor', async () => {
    const { task } = await lw.call('delegate_task', { objective: 'for the event stream', workspace: lw.repo, mode: 'plan_only' });
    const page = await lw.call('get_events', { task_id: task.id });
    const created = page.events.find((e: { type: string }) => e.type === 'task.created');
    const ctrl = new AbortController();
    const res = await fetch(`${lw.url}api/events?cursor=${created.seq - 1}`, { signal: ctrl.signal, headers: { authorization: `Bearer ${lw.token}` } });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(`id: ${created.seq}\n`)) text += new TextDecoder().decode((await reader.read()).value);
    ctrl.abort();
    expect(text).toContain('event: hello');
    expect(text).toContain('"type":"task.created"');
    expect(res.headers.get('content-type')).toContain('text/event-stream');
  });
});

test('--host 0.0.0.0 and names are refused with a clear error', async () => {
  const home = mkdtempSync(join(tmpdir(), 'lw-e2e-host-'));
  try {
    for (const host of ['0.0.0.0', 'localhost', '192.168.1.10']) {
      const run = runServe(['--host', host, '--port', '0'], { LIGHTWORKER_HOME: home });
      expect(await run.exited).toBe(2);
      expect(run.output()).toContain('serve binds only to literal loopback (127.0.0.1 or ::1)');
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('IPv6 loopback (::1) works', async () => {
  let lw6: ConsoleServer | undefined;
  try {
    lw6 = await startConsole('::1');
  } catch (err) {
    if (/EADDRNOTAVAIL|not available on this machine/.test(String(err))) {
      process.stderr.write('skipping: this machine has no IPv6 loopback\n');
      test.skip(true, 'no IPv6 loopback on this machine');
    }
    throw err;
  }
  try {
    expect(lw6.url).toMatch(/^http:\/\/\[::1\]:\d+\/$/);
    expect((await lw6.call('list_tasks')).tasks).toEqual([]);
    const port = new URL(lw6.url).port;
    expect((await raw(lw6.url, { host: `127.0.0.1:${port}`, headers: { authorization: `Bearer ${lw6.token}` } })).status).toBe(421);
  } finally {
    await lw6?.stop();
  }
});
