/**
 * Bytes of task JSON one MCP answer may carry: clients cut or refuse larger tool results (Codex keeps
 * 48 KB, Claude Code refuses ~100 KB inline), so list_tasks pages end early with has_more and
 * wait_tasks leaves out tasks that ended well.
 */
export const MCP_ANSWER_BYTES = 28_000;

/**
 * The leading items, each as `show` makes it, whose JSON fits in `budget` bytes (at least one when
 * there is any). `show` runs only for items that are looked at.
 */
export function takeWithin<I, O>(items: readonly I[], show: (item: I) => O, budget = MCP_ANSWER_BYTES): O[] {
  const out: O[] = [];
  let bytes = 2;
  for (const item of items) {
    const shown = show(item);
    bytes += Buffer.byteLength(JSON.stringify(shown)) + 1;
    if (bytes > budget && out.length > 0) break;
    out.push(shown);
  }
  return out;
}
