import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { registerIpcHandlers, type IpcMainLike } from '../../main/desktop/ipc.js';
import { isTrustedSender } from '../../main/desktop/sender-check.js';
import { claimSingleInstance } from '../../main/desktop/single-instance.js';
import { makeHome, type TestHome } from '../helpers/env.js';

type Handler = Parameters<IpcMainLike['handle']>[1];
const RENDERER = 'file:///opt/LightWorker/resources/app.asar/out/renderer/index.html';

function fakeIpcMain() {
  const handlers = new Map<string, Handler>();
  return { handlers, handle: (ch: string, fn: Handler) => void handlers.set(ch, fn) };
}

describe('desktop IPC', () => {
  let h: TestHome;
  afterEach(() => h?.cleanup());

  it('registers one lw:<command> handler per command in the table', () => {
    h = makeHome();
    const ipc = fakeIpcMain();
    registerIpcHandlers(ipc, h.engine, () => RENDERER);
    expect([...ipc.handlers.keys()].sort()).toEqual([...COMMANDS.keys()].map((n) => `lw:${n}`).sort());
  });

  it('runs commands for our renderer, validating input with the command schema', async () => {
    h = makeHome();
    const ipc = fakeIpcMain();
    registerIpcHandlers(ipc, h.engine, () => RENDERER);
    const ours = { senderFrame: { url: `${RENDERER}#/tasks` } };
    const created = (await ipc.handlers.get('lw:delegate_task')!(ours, { objective: 'from ipc', workspace: h.repo, mode: 'plan_only' })) as { ok: boolean; data: { task: { id: string; status: string } } };
    expect(created.ok).toBe(true);
    expect(created.data.task.status).toBe('awaiting_approval');
    const bad = await ipc.handlers.get('lw:delegate_task')!(ours, { objective: '', workspace: h.repo });
    expect(bad).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    expect((bad as { error: { message: string } }).error.message).toContain('objective');
    const listed = (await ipc.handlers.get('lw:list_tasks')!(ours, {})) as { data: { tasks: unknown[] } };
    expect(listed.data.tasks).toHaveLength(1);
  });

  it('refuses other senders and changes nothing', async () => {
    h = makeHome();
    const ipc = fakeIpcMain();
    registerIpcHandlers(ipc, h.engine, () => RENDERER);
    for (const senderFrame of [{ url: 'https://evil.example/' }, { url: 'file:///tmp/other.html' }, null]) {
      const r = await ipc.handlers.get('lw:delegate_task')!({ senderFrame }, { objective: 'sneaky', workspace: h.repo });
      expect(r).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    }
    expect((await h.call('list_tasks')).tasks).toHaveLength(0);
  });
});

describe('sender check', () => {
  it('accepts only our page (file) or our origin (dev server)', () => {
    expect(isTrustedSender(`${RENDERER}#/inbox`, RENDERER)).toBe(true);
    expect(isTrustedSender('file:///tmp/index.html', RENDERER)).toBe(false);
    expect(isTrustedSender('http://localhost:5173/#/tasks', 'http://localhost:5173/')).toBe(true);
    expect(isTrustedSender('http://localhost:5174/', 'http://localhost:5173/')).toBe(false);
    expect(isTrustedSender('', RENDERER)).toBe(false);
    expect(isTrustedSender('not a url', RENDERER)).toBe(false);
  });
});

describe('single instance', () => {
  function fakeApp(lock: boolean) {
    const app = { quits: 0, listeners: [] as (() => void)[], requestSingleInstanceLock: () => lock, quit: () => void app.quits++, on: (_e: 'second-instance', fn: () => void) => app.listeners.push(fn) };
    return app;
  }
  it('the first instance holds the lock and shows itself when launched again', () => {
    const app = fakeApp(true);
    let shown = 0;
    expect(claimSingleInstance(app, () => shown++)).toBe(true);
    app.listeners.forEach((fn) => fn());
    expect(shown).toBe(1);
    expect(app.quits).toBe(0);
  });
  it('a second instance quits at once', () => {
    const app = fakeApp(false);
    expect(claimSingleInstance(app, () => undefined)).toBe(false);
    expect(app.quits).toBe(1);
    expect(app.listeners).toHaveLength(0);
  });
});
