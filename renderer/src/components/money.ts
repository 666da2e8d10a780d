/** Dollars as a reviewer reads them: cents for real sums, four decimals for small ones, a dash for none. */
export function formatUsd(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return '—';
  if (usd === 0) return '$0.00';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}
