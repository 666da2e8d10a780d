import { createHmac } from 'node:crypto';

/**
 * How a sealed text is framed: `LWk1` + the sealing key's id (8 bytes) + iv (12) + tag (16) + body, so a
 * runner can tell, without trying, that a task was sealed with a key it does not hold (another host's
 * `[store] key_file`) and leave it for a runner that holds it. Texts sealed before the frame are iv + tag +
 * body (no key id): their key is found out by trying to open them.
 */
const MAGIC = Buffer.from('LWk1', 'latin1');
const ID_BYTES = 8;

/** A key's public id: a digest of it that reveals nothing of it, shown as 16 hex digits. */
export function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update('lightworker key id 1').digest().subarray(0, ID_BYTES).toString('hex');
}

export function frameSealed(keyId: string, sealed: Buffer): Buffer {
  return Buffer.concat([MAGIC, Buffer.from(keyId, 'hex'), sealed]);
}

/** The key id a blob names (null: sealed before key ids were recorded) and its iv + tag + body. */
export function parseSealed(blob: Buffer): { keyId: string | null; sealed: Buffer } {
  if (blob.length >= MAGIC.length + ID_BYTES + 28 && blob.subarray(0, MAGIC.length).equals(MAGIC)) {
    return { keyId: blob.subarray(MAGIC.length, MAGIC.length + ID_BYTES).toString('hex'), sealed: blob.subarray(MAGIC.length + ID_BYTES) };
  }
  return { keyId: null, sealed: blob };
}
