/**
 * Bytes one MCP answer may take on the wire: clients cut or refuse larger tool results (Codex keeps
 * 48 KB, Claude Code refuses ~100 KB inline), so list_tasks pages end early with has_more and
 * wait_tasks leaves out tasks that ended well. An answer carries its JSON twice — as structuredContent
 * and, escaped, as the text block older clients read — so each item counts for both copies.
 */
export const MCP_ANSWER_BYTES = 30_720;

/** What an answer holds besides its items: the JSON-RPC envelope, the content wrapper, has_more, cursor. */
const ENVELOPE_BYTES = 512;

/** Bytes `json` takes in an MCP answer: once as it is, once escaped inside the text block. */
function answerBytes(json: string): number {
  return Buffer.byteLength(json) + Buffer.byteLength(JSON.stringify(json)) - 2;
}

/**
 * The leading items, each as `show` makes it, whose answer fits in `budget` bytes on the wire (at least
 * one when there is any). `show` runs only for items that are looked at.
 */
export function takeWithin<I, O>(items: readonly I[], show: (item: I) => O, budget = MCP_ANSWER_BYTES): O[] {
  const out: O[] = [];
  let bytes = ENVELOPE_BYTES;
  for (const item of items) {
    const shown = show(item);
    bytes += answerBytes(JSON.stringify(shown)) + 2;
    if (bytes > budget && out.length > 0) break;
    out.push(shown);
  }
  return out;
}
