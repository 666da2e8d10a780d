import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';

describe('workers commands', () => {
  let h: TestHome;
  afterEach(() => h?.cleanup());

  it('links, lists and unlinks a generic CLI; bad templates change nothing', async () => {
    h = makeHome();
    const linked = await h.call('link_worker', { name: 'myagent', command_json: ['myagent-bin', 'run', '{prompt}'], resume_json: ['myagent-bin', 'resume', '{session}', '{prompt}'] });
    expect(linked.warning).toMatch(/myagent gets the prompt .* in its argv, which every local user can read .*\{prompt_file\}/);
    const { workers } = await h.call('list_workers');
    const names = workers.map((w: { name: string }) => w.name);
    expect(names).toEqual(expect.arrayContaining(['mock', 'codex', 'claude-code', 'opencode', 'myagent']));
    const mine = workers.find((w: { name: string }) => w.name === 'myagent');
    expect(mine).toMatchObject({ installed: false, builtin: false, capabilities: { sessions: true }, reason: 'myagent-bin not found on PATH' });
    // The ACP agents' own tools could write, so their read-only kind runs in a snapshot and says so.
    const isAcp = (x: { name: string }) => ACP_AGENTS.some((a) => a.name === x.name);
    for (const w of workers.filter((x: { builtin: boolean; name: string }) => x.builtin && isAcp(x))) expect(w.capabilities.sandboxModes).toEqual(['read-only (snapshot)', 'workspace-write']);
    for (const w of workers.filter((x: { builtin: boolean; name: string }) => x.builtin && x.name !== 'mock' && !isAcp(x))) {
      expect(w.capabilities.sandboxModes).toEqual(['read-only', 'workspace-write']);
      // A version, or (a loaded machine's probe can pass its 5 s) "version unknown" saying why, never a bare null.
      if (w.installed) expect(w.version ?? w.versionNote).toMatch(w.version ? /^\d+\.\d+\.\d+/ : /^version unknown: \S/);
      else expect(w.reason).toBeTruthy();
    }
    await expect(h.call('link_worker', { name: 'other', command_json: ['{prompt_file}', 'x'] })).rejects.toThrow(/command_json: the executable itself cannot be a placeholder/);
    // No prompt placeholder: the prompt goes to stdin; {prompt_file}: a private file. Neither is warned about.
    expect((await h.call('link_worker', { name: 'piped', command_json: ['x'] })).warning).toBeUndefined();
    expect((await h.call('link_worker', { name: 'filed', command_json: ['x', '--prompt-file', '{prompt_file}'] })).warning).toBeUndefined();
    const secret = ['agent', '--api-key', 'sk-proj-AbCdEf0123456789abcdefGHIJklmn', '{prompt}'];
    await expect(h.call('link_worker', { name: 'leaky', command_json: secret })).rejects.toThrow(/command_json\[2\]: looks like a secret/);
    await expect(h.call('link_worker', { name: 'leaky', command_json: ['agent', '{prompt}'], resume_json: ['agent', 'password=hunter22', '{session}'] })).rejects.toThrow(/resume_json\[1\]/);
    await expect(h.call('link_worker', { name: 'codex', command_json: ['x', '{prompt}'] })).rejects.toThrow(/built-in/);
    await h.call('unlink_worker', { name: 'myagent' });
    await expect(h.call('unlink_worker', { name: 'myagent' })).rejects.toThrow(/no linked worker "myagent"/);
    const after = (await h.call('list_workers')).workers.map((w: { name: string }) => w.name);
    expect(after).not.toContain('myagent');
    expect(after).not.toContain('other');
    expect(after).not.toContain('leaky');
  }, 60_000);
  it('an ACP agent reports the key its turn would get (its own config home: a login in HOME never reaches it)', async () => {
    h = makeHome();
    const saved = { ...process.env };
    for (const a of ACP_AGENTS) for (const k of a.keyVars) delete process.env[k];
    process.env.GEMINI_API_KEY = 'test-gemini-key-00000000';
    try {
      const { workers } = await h.call('list_workers');
      const by = (n: string) => workers.find((w: { name: string }) => w.name === n);
      expect(by('gemini')).toMatchObject({ authenticated: true, auth: { ok: true, source: 'env GEMINI_API_KEY' } });
      expect(by('qwen')).toMatchObject({ authenticated: false, auth: { ok: false, source: 'env (none set)' } });
      expect(by('qwen').auth.hint).toMatch(/export OPENAI_API_KEY or DASHSCOPE_API_KEY, or route it through a gateway/);
      // Copilot has no base-URL setting: no gateway is offered as a way out.
      expect(by('copilot').auth.hint).not.toMatch(/gateway/);
      // doctor says the same: a qwen without its key is not usable, and says which key.
      const { checks } = await h.call('run_doctor');
      const check = (n: string) => checks.find((c: { name: string }) => c.name === `worker ${n}`);
      expect(check('gemini')).toMatchObject({ ok: true });
      expect(check('gemini').detail).toContain('auth: env GEMINI_API_KEY');
      expect(check('qwen')).toMatchObject({ ok: false });
      expect(check('qwen').fix).toMatch(/export OPENAI_API_KEY or DASHSCOPE_API_KEY/);
    } finally {
      process.env = saved;
    }
  });
});
