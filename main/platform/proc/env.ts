/** Copy only the named variables from `parent`; absent ones are skipped. The one allow-list mechanism. */
export function pickEnv(keys: readonly string[], parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of keys) {
    const v = parent[k];
    if (v !== undefined) env[k] = v;
  }
  return env;
}
