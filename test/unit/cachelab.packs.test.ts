import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalPackText, CONTEXT_PACK_MAX_BYTES, packHash } from '../../main/cachelab/context-packs.js';
import { buildPrompt } from '../../main/cachelab/prompt.js';
import { resultJsonSchema } from '../../main/tasks/contract/result-schemas.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const add = (name: string, version: string, text: string) => h.call('add_context_pack', { name, version, text });

describe('context packs', () => {
  it('canonical encoding: NFC, \\n line ends, trailing whitespace trimmed', () => {
    const decomposed = 'Cafe\u0301 rules  \r\nline two\t\r\n\r\n\r\n';
    expect(canonicalPackText(decomposed)).toBe('Caf\u00e9 rules\nline two\n');
    expect(canonicalPackText('a\rb')).toBe('a\nb\n');
  });

  it('stores once; the hash covers name, version and text; versions are immutable', async () => {
    const a = await add('house', '1', 'Rules\r\n');
    expect(a).toMatchObject({ name: 'house', version: '1', bytes: 6, created: true });
    expect(a.hash).toBe(packHash('house', '1', 'Rules\n'));
    // The same text in another encoding is the same pack: nothing new is stored.
    expect(await add('house', '1', 'Rules   \n\n')).toMatchObject({ hash: a.hash, created: false });
    const b = await add('other', '1', 'Rules\n');
    const c = await add('house', '2', 'Rules\n');
    expect(new Set([a.hash, b.hash, c.hash]).size).toBe(3);
    await expect(add('house', '1', 'Different')).rejects.toMatchObject({ code: 'conflict' });
    const { packs } = await h.call('list_context_packs', {});
    expect(packs).toHaveLength(3);
    for (const p of packs) expect(Object.keys(p).sort()).toEqual(['bytes', 'createdAt', 'hash', 'name', 'version']);
    const shown = await h.call('get_context_pack', { name: 'house' });
    expect(shown).toMatchObject({ name: 'house', version: '2' });
    expect(JSON.stringify(shown)).not.toContain('Rules');
    expect(await h.call('get_context_pack', { name: 'house@1' })).toMatchObject({ version: '1', hash: a.hash });
    await expect(h.call('get_context_pack', { name: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('accepts exactly 32 KiB of UTF-8 and rejects one byte more (multi-byte characters count as bytes)', async () => {
    expect(CONTEXT_PACK_MAX_BYTES).toBe(32768);
    const fits = 'x'.repeat(32767) + '\n';
    expect((await add('big', '1', fits)).bytes).toBe(32768);
    await expect(add('big', '2', 'x'.repeat(32768) + '\n')).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/32769 bytes.*32768/) });
    // 10923 × "é" (2 bytes) = 21846 bytes is fine; 16384 × "€" (3 bytes) = 49152 bytes is not, though only 16384 characters.
    expect((await add('multi', '1', 'é'.repeat(10923))).bytes).toBe(21847);
    await expect(add('multi', '2', '€'.repeat(16384))).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(add('empty', '1', ' \n\t\n')).rejects.toMatchObject({ message: expect.stringMatching(/empty/) });
    await expect(add('bin', '1', 'a\u0000b')).rejects.toMatchObject({ message: expect.stringMatching(/control characters/) });
    await expect(add('bad name', '1', 'x')).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/name/) });
  });

  it('rejects text that looks like a credential and stores nothing', async () => {
    const secrets = [
      'Use OPENAI key sk-proj-abcdefghijklmnopqrstuvwxyz0123',
      'token: ghp_abcdefghijklmnopqrstuvwxyz0123456789AB',
      'password=hunter2hunter2',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----',
      'aws: AKIAABCDEFGHIJKLMNOP',
    ];
    for (const [i, text] of secrets.entries()) {
      await expect(add('leaky', String(i), `Project notes\n${text}\n`)).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/credential/) });
    }
    expect((await h.call('list_context_packs', {})).packs).toEqual([]);
    // Talking about keys is fine.
    expect((await add('docs', '1', 'Keys live in the env var named by key_env; never paste one here.')).created).toBe(true);
  });

  it('reads a UTF-8 file and refuses one that is not', async () => {
    const good = join(h.root, 'pack.md');
    writeFileSync(good, '\ufeffGlossary\n');
    expect(await h.call('add_context_pack', { name: 'g', version: '1', file: good })).toMatchObject({ bytes: 9 });
    const bad = join(h.root, 'bad.bin');
    writeFileSync(bad, Buffer.from([0x47, 0xff, 0xfe, 0x00]));
    await expect(h.call('add_context_pack', { name: 'g', version: '2', file: bad })).rejects.toMatchObject({ message: expect.stringMatching(/UTF-8/) });
    await expect(h.call('add_context_pack', { name: 'g', version: '3', file: 'rel.md' })).rejects.toMatchObject({ message: expect.stringMatching(/absolute/) });
    await expect(h.call('add_context_pack', { name: 'g', version: '4' })).rejects.toMatchObject({ code: 'invalid_input' });
  });

  it('tasks pin the pack version; children and retries inherit it; unknown packs are refused', async () => {
    await add('house', '1', 'House rules v1');
    const { task } = await h.call('delegate_task', { objective: 'look', workspace: h.repo, context_pack: 'house' });
    expect(task.contextPack).toBe('house@1');
    await add('house', '2', 'House rules v2');
    const child = (await h.call('delegate_task', { objective: 'child', workspace: h.repo, parent_id: task.id })).task;
    expect(child.contextPack).toBe('house@1');
    expect((await h.call('delegate_task', { objective: 'new', workspace: h.repo, context_pack: 'house' })).task.contextPack).toBe('house@2');
    await h.call('cancel_task', { id: task.id });
    const retried = (await h.call('retry_task', { id: task.id })).task;
    expect(retried).toMatchObject({ contextPack: 'house@1', attempt: 2 });
    await expect(h.call('delegate_task', { objective: 'x', workspace: h.repo, context_pack: 'missing' })).rejects.toMatchObject({
      code: 'invalid_input', message: expect.stringMatching(/context_pack: unknown context pack "missing"/),
    });
    await expect(h.call('delegate_batch', { tasks: [{ objective: 'a', workspace: h.repo }, { objective: 'b', workspace: h.repo, context_pack: 'house@9' }] })).rejects.toMatchObject({
      message: expect.stringMatching(/tasks\[1\]\.context_pack/),
    });
    expect((await h.call('list_tasks', {})).tasks).toHaveLength(3);
  });

  it('puts the pack text in the stable part of the prompt', async () => {
    await add('house', '1', 'House rules: be brief.');
    const { task } = await h.call('delegate_task', { objective: 'look', workspace: h.repo, context_pack: 'house' });
    const p = buildPrompt(task, { resultSchema: resultJsonSchema('explore'), config: h.engine.config, db: h.engine.db });
    expect(p.stablePrefix).toContain('# Context pack house@1\nHouse rules: be brief.');
    expect(p.text.indexOf('House rules')).toBeLessThan(p.text.indexOf('# Task'));
    expect(p.pack).toMatchObject({ ref: 'house@1', bytes: 23 });
  });
});
