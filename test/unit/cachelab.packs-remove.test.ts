import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const add = (name: string, version: string, text: string) => h.call('add_context_pack', { name, version, text });
const refs = async () => ((await h.call('list_context_packs', {})).packs as { name: string; version: string }[]).map((p) => `${p.name}@${p.version}`);

describe('removing context packs', () => {
  it('removes one version or all of them; a missing pack is not found and nothing changes', async () => {
    await add('house', '1', 'House rules v1');
    await add('house', '2', 'House rules v2');
    await add('style', '1', 'Style guide');
    expect(await h.call('remove_context_pack', { name: 'house@1' })).toMatchObject({ removed: [{ name: 'house', version: '1' }], endedTasks: 0 });
    expect((await refs()).sort()).toEqual(['house@2', 'style@1']);
    await expect(h.call('remove_context_pack', { name: 'house@1' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(h.call('remove_context_pack', { name: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
    expect((await h.call('remove_context_pack', { name: 'house' })).removed).toHaveLength(1);
    expect(await refs()).toEqual(['style@1']);
    // The name is free again: a new version 1 with other text is a new pack, not a conflict.
    expect(await add('house', '1', 'Other rules')).toMatchObject({ created: true });
  });

  it('is refused while an unfinished task is pinned to the version, and allowed once it has ended', async () => {
    await add('house', '1', 'House rules v1');
    await add('house', '2', 'House rules v2');
    const { task } = await h.call('delegate_task', { objective: 'look', workspace: h.repo, context_pack: 'house@1' });
    await expect(h.call('remove_context_pack', { name: 'house' })).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining(task.id) });
    await expect(h.call('remove_context_pack', { name: 'house@1' })).rejects.toMatchObject({ code: 'conflict' });
    expect((await refs()).sort()).toEqual(['house@1', 'house@2']);
    // A version no task uses can go.
    await h.call('remove_context_pack', { name: 'house@2' });
    await h.call('cancel_task', { id: task.id });
    expect(await h.call('remove_context_pack', { name: 'house@1' })).toMatchObject({ endedTasks: 1 });
    expect(await refs()).toEqual([]);
  });

  it('is the person\'s call: an MCP client may not remove a pack', async () => {
    await add('house', '1', 'House rules v1');
    await expect(h.call('remove_context_pack', { name: 'house' }, 'mcp')).rejects.toMatchObject({ code: 'forbidden' });
    expect(await refs()).toEqual(['house@1']);
  });

  it('shows the text only when asked', async () => {
    await add('house', '1', 'House rules v1');
    expect(JSON.stringify(await h.call('get_context_pack', { name: 'house' }))).not.toContain('House rules');
    expect(await h.call('get_context_pack', { name: 'house', text: true })).toMatchObject({ text: 'House rules v1\n', versions: [{ version: '1' }] });
  });
});
