import type { ReviewCommentView } from '../api/types.js';

/** A line of the new side of a rendered diff (diff2html's unified layout). */
export interface LineRef {
  file: string;
  line: number;
}

/** The file a diff2html file block shows: its new name (a rename reads "old → new"). */
function fileOf(wrapper: Element): string | null {
  const name = wrapper.querySelector('.d2h-file-name')?.textContent?.trim();
  if (!name) return null;
  const parts = name.split('→');
  return parts[parts.length - 1].trim();
}

/** The new-side line under a click, or null (a deleted line, a hunk header, outside any file). */
export function commentTarget(el: Element | null): LineRef | null {
  const row = el?.closest('tr');
  const wrapper = row?.closest('.d2h-file-wrapper');
  if (!row || !wrapper || row.classList.contains('lw-comment-row')) return null;
  const n = Number(row.querySelector('.line-num2')?.textContent?.trim());
  const file = fileOf(wrapper);
  return file && Number.isInteger(n) && n > 0 ? { file, line: n } : null;
}

function rowsOf(root: HTMLElement, file: string): Map<number, HTMLTableRowElement> {
  const out = new Map<number, HTMLTableRowElement>();
  for (const w of root.querySelectorAll('.d2h-file-wrapper')) {
    if (fileOf(w) !== file) continue;
    for (const tr of w.querySelectorAll('tr')) {
      const n = Number(tr.querySelector('.line-num2')?.textContent?.trim());
      if (Number.isInteger(n) && n > 0) out.set(n, tr as HTMLTableRowElement);
    }
  }
  return out;
}

/**
 * Draw the review into the rendered diff: commented lines marked, each comment as a row under its last
 * line (text set as textContent: a comment is never markup), the picked lines highlighted.
 */
export function placeInlineComments(root: HTMLElement, comments: ReviewCommentView[], picked: { file: string; line: number; endLine: number } | null): void {
  for (const el of root.querySelectorAll('.lw-comment-row')) el.remove();
  for (const el of root.querySelectorAll('.lw-commented, .lw-picked')) el.classList.remove('lw-commented', 'lw-picked');
  for (const c of comments) {
    const rows = rowsOf(root, c.file);
    for (let n = c.line; n <= c.endLine; n++) rows.get(n)?.classList.add('lw-commented');
    const last = rows.get(c.endLine);
    if (!last) continue;
    const tr = document.createElement('tr');
    tr.className = 'lw-comment-row';
    tr.dataset.testid = 'inline-comment';
    tr.appendChild(document.createElement('td'));
    const td = document.createElement('td');
    const box = document.createElement('div');
    box.className = 'lw-inline-comment';
    const who = document.createElement('strong');
    who.textContent = `${c.by || 'review'} · ${c.sentAs !== null ? `sent as attempt ${c.sentAs}` : 'not sent yet'}`;
    const text = document.createElement('p');
    text.textContent = c.text;
    box.append(who, text);
    td.appendChild(box);
    tr.appendChild(td);
    last.after(tr);
  }
  if (picked) {
    const rows = rowsOf(root, picked.file);
    for (let n = picked.line; n <= picked.endLine; n++) rows.get(n)?.classList.add('lw-picked');
  }
}
