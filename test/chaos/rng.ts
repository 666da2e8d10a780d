// A seeded PRNG (mulberry32) so a chaos run with the same --seed makes the same choices.
export interface Rng {
  /** Uniform in [0, 1). */
  next: () => number;
  /** Integer in [min, max]. */
  int: (min: number, max: number) => number;
  chance: (p: number) => boolean;
  pick: <T>(items: readonly T[]) => T;
  /** `n` characters from `alphabet`. */
  chars: (n: number, alphabet?: string) => string;
}

export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)],
    chars: (n, alphabet = ALNUM) => Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''),
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
