import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICES, effectivePrices, priceOf, priceTokens } from '../../main/tasks/cost.js';

describe('prices', () => {
  it('finds a model by name, without its provider prefix or dated suffix; an unknown one has no price', () => {
    const prices = effectivePrices({ prices: {} });
    expect(priceOf(prices, 'claude-sonnet-4-5')).toBe(DEFAULT_PRICES['claude-sonnet-4-5']);
    expect(priceOf(prices, 'anthropic/claude-sonnet-4-5-20250929')).toBe(DEFAULT_PRICES['claude-sonnet-4-5']);
    expect(priceOf(prices, 'openai/gpt-5.5-mini')).toBe(DEFAULT_PRICES['gpt-5.5-mini']);
    expect(priceOf(prices, 'gpt-5.5-turbo')).toBeNull();
  });

  it('config rows override and add to the built-in ones', () => {
    const prices = effectivePrices({ prices: { 'gpt-5.5': { input: 2, output: 4 }, mine: { input: 1, output: 1 } } });
    expect(prices['gpt-5.5']).toEqual({ input: 2, output: 4 });
    expect(prices.mine).toEqual({ input: 1, output: 1 });
    expect(prices['claude-haiku-4-5']).toBe(DEFAULT_PRICES['claude-haiku-4-5']);
  });

  it('bills cached input at the cached price (input price when none) and never more cached than input', () => {
    expect(priceTokens({ input: 3, cached: 0.3, output: 15 }, 1_000_000, 400_000, 100_000)).toBeCloseTo(3.42, 9);
    expect(priceTokens({ input: 3, output: 15 }, 1_000_000, 400_000, 0)).toBeCloseTo(3, 9);
    expect(priceTokens({ input: 1, cached: 0, output: 0 }, 100, 500, 0)).toBe(0);
  });
});
