import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'; // Crockford base32, as ULID specifies

let lastTime = 0;
let lastRandom: number[] = [];

/**
 * A ULID: 48-bit millisecond time + 80 random bits, 26 chars, lexically sortable.
 * Monotonic within one process: ids made in the same millisecond increment the random part,
 * so ordering by id equals creation order.
 */
export function newId(now: number = Date.now()): string {
  if (now <= lastTime) {
    now = lastTime;
    incrementRandom();
  } else {
    lastTime = now;
    const bytes = randomBytes(16);
    lastRandom = Array.from({ length: 16 }, (_, i) => bytes[i] % 32);
  }
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time + lastRandom.map((d) => ALPHABET[d]).join('');
}

function incrementRandom(): void {
  for (let i = lastRandom.length - 1; i >= 0; i--) {
    if (lastRandom[i] < 31) {
      lastRandom[i]++;
      return;
    }
    lastRandom[i] = 0;
  }
}

/** A short random token, hex, for per-start HTTP tokens and lease holder ids. */
export function newToken(bytes = 24): string {
  return randomBytes(bytes).toString('hex');
}
