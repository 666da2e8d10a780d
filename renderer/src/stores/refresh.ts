/** Coalesce bursts of events about one key into one refetch per `ms`. */
export function keyedDebounce(ms: number, fn: (key: string) => void): (key: string) => void {
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  return (key) => {
    if (timers.has(key)) return;
    timers.set(
      key,
      setTimeout(() => {
        timers.delete(key);
        fn(key);
      }, ms),
    );
  };
}
