/**
 * Bytes of task JSON one MCP answer may carry: clients cut or refuse larger tool results (Codex keeps
 * 48 KB, Claude Code refuses ~100 KB inline), so list_tasks pages end early with has_more and
 * wait_tasks leaves out tasks that ended well.
 */
export const MCP_ANSWER_BYTES = 28_000;

/** How many of `items`, from the start, fit in `budget` bytes of JSON; at least one when any. */
export function countWithin(items: readonly unknown[], budget = MCP_ANSWER_BYTES): number {
  let bytes = 2;
  for (let i = 0; i < items.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(items[i])) + 1;
    if (bytes > budget && i > 0) return i;
  }
  return items.length;
}
