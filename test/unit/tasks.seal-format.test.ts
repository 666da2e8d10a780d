import { createCipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { getTask } from '../../main/store/tasks.js';
import { upsertTaskSecrets } from '../../main/store/sealed.js';
import { foreignSealOf, homeKeyId, unsealTask } from '../../main/tasks/secrets.js';
import { keyIdOf, parseSealed } from '../../main/tasks/seal-format.js';

/**
 * Sealed texts name the id of the key that sealed them, so a runner holding another key knows it cannot open
 * a task without trying; texts sealed before ids were recorded still open, and a foreign one is found by trying.
 */
let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

async function sealedTask(): Promise<string> {
  const { task } = await h.call('delegate_task', { objective: 'deploy with password=CorrectHorse42', workspace: h.repo });
  return task.id as string;
}

const blobOf = (id: string) => (h.engine.db.prepare('SELECT ciphertext FROM task_secrets WHERE task_id = ?').get(id) as { ciphertext: Buffer }).ciphertext;

function legacySeal(key: Buffer, text: string): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(text, 'utf8'), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]);
}

describe('sealed texts and their key ids', () => {
  it('a new sealed text names this home key’s id (a digest, not the key) and opens here', async () => {
    const id = await sealedTask();
    const key = readFileSync(join(h.engine.home.root, 'secret.key'));
    const mine = homeKeyId(h.engine.home.root);
    expect(mine).toMatch(/^[0-9a-f]{16}$/);
    expect(keyIdOf(key)).toBe(mine);
    expect(blobOf(id).includes(key)).toBe(false);
    expect(parseSealed(blobOf(id)).keyId).toBe(mine);
    expect(foreignSealOf(h.engine.db, h.engine.home.root, id)).toBeNull();
    expect(unsealTask(h.engine.db, h.engine.home.root, getTask(h.engine.db, id)!).objective).toContain('CorrectHorse42');
  });

  it('a text sealed with another key is named by that key’s id, and refused saying both ids', async () => {
    const id = await sealedTask();
    const other = randomBytes(32);
    const original = JSON.stringify({ objective: 'x password=y', name: 'n', successCriteria: [], verify: [], metadata: {} });
    // Framed as another home would frame it.
    const framed = Buffer.concat([Buffer.from('LWk1', 'latin1'), Buffer.from(keyIdOf(other), 'hex'), legacySeal(other, original)]);
    h.engine.write(() => upsertTaskSecrets(h.engine.db, id, framed));
    expect(foreignSealOf(h.engine.db, h.engine.home.root, id)).toBe(keyIdOf(other));
    expect(() => unsealTask(h.engine.db, h.engine.home.root, getTask(h.engine.db, id)!)).toThrow(new RegExp(`key ${homeKeyId(h.engine.home.root)}\\): it was sealed with key ${keyIdOf(other)}`));
  });

  it('a text sealed before key ids (iv + tag + body) still opens with its key; with another key it is found foreign by trying', async () => {
    const id = await sealedTask();
    const key = readFileSync(join(h.engine.home.root, 'secret.key'));
    const original = JSON.stringify({ objective: 'old password=Legacy1', name: 'n', successCriteria: [], verify: [], metadata: {} });
    h.engine.write(() => upsertTaskSecrets(h.engine.db, id, legacySeal(key, original)));
    expect(foreignSealOf(h.engine.db, h.engine.home.root, id)).toBeNull();
    expect(unsealTask(h.engine.db, h.engine.home.root, getTask(h.engine.db, id)!).objective).toBe('old password=Legacy1');
    h.engine.write(() => upsertTaskSecrets(h.engine.db, id, legacySeal(randomBytes(32), original)));
    expect(foreignSealOf(h.engine.db, h.engine.home.root, id)).toBe('unknown');
    expect(() => unsealTask(h.engine.db, h.engine.home.root, getTask(h.engine.db, id)!)).toThrow(/sealed with another key/);
  });
});
