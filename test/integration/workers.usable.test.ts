import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';

const FAKE = fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));

let h: TestHome;
afterEach(() => h?.cleanup());

type Listing = { name: string; installed: boolean; usable: boolean; fix: string | null; auth: { ok: boolean; hint: string | null } };
const listing = async (name: string): Promise<Listing> => (await h.call('list_workers')).workers.find((w: Listing) => w.name === name);

describe('list_workers says which workers can run, and the fix for the others', () => {
  it('a missing CLI: not usable, with its install command', async () => {
    h = makeHome();
    h.configure(`[workers.codex]\ncommand = ["/nonexistent/bin/codex"]\n`);
    expect(await listing('codex')).toMatchObject({ installed: false, usable: false, fix: 'npm install -g @openai/codex' });
  });

  it('an installed CLI without credentials: not usable, with where its credentials go', async () => {
    h = makeHome();
    h.configure(`[workers.codex]\ncommand = ["bash", ${JSON.stringify(FAKE)}]\nauth = "env"\n`);
    const codex = await listing('codex');
    expect(codex).toMatchObject({ installed: true, usable: false });
    expect(codex.auth.ok).toBe(false);
    expect(codex.fix).toBe(codex.auth.hint ?? 'give it credentials: see `lightworker doctor`');
    expect(codex.fix).toBeTruthy();
  });

  it('a worker that can run: usable, nothing to fix', async () => {
    h = makeHome();
    h.configure(`[workers.codex]\ncommand = ["bash", ${JSON.stringify(FAKE)}]\nauth = "none"\n`);
    expect(await listing('codex')).toMatchObject({ installed: true, usable: true, fix: null });
    expect(await listing('mock')).toMatchObject({ usable: true, fix: null });
  });
});
