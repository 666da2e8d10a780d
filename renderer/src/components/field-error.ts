import { nextTick } from 'vue';

// Where a refused form's error goes: the field the engine (or the page's own check) named is marked, its
// label carries the words, and it is scrolled to and focused — the person sees the problem where it is,
// whichever part of the form they were looking at when they clicked.

/** The control named `key` (`scheduler.max_concurrency`), else the nearest named parent key (`profiles.fast`). */
export function fieldFor(form: HTMLElement | null, key: string): HTMLElement | null {
  const parts = key.split('.');
  for (let n = parts.length; n > 0; n--) {
    const el = form?.querySelector<HTMLElement>(`[name="${CSS.escape(parts.slice(0, n).join('.'))}"]`);
    if (el) return el;
  }
  return null;
}

export function clearFieldErrors(form: HTMLElement | null): void {
  for (const el of form?.querySelectorAll<HTMLElement>('[aria-invalid=true]') ?? []) {
    el.removeAttribute('aria-invalid');
    delete el.closest('label')?.dataset.error;
  }
}

/** Mark the field `key` names with `text` and bring it into view; false when the form has no such field. */
export async function markField(form: HTMLElement | null, key: string, text: string): Promise<boolean> {
  clearFieldErrors(form);
  const el = fieldFor(form, key);
  if (!el) return false;
  el.setAttribute('aria-invalid', 'true');
  const label = el.closest('label');
  if (label) label.dataset.error = text;
  await nextTick();
  el.scrollIntoView({ block: 'center' });
  el.focus({ preventScroll: true });
  return true;
}

/**
 * The field an engine refusal names at its start (`workers: …`, `sources[1]: …`, `budget.max_tokens: …`),
 * indices dropped (one control holds the list), and the words after it; null when it names none.
 */
export function refusedField(message: string): { key: string; text: string } | null {
  const m = /^([a-z_]\w*(?:\[\d+\])?(?:\.\w+(?:\[\d+\])?)*): ([\s\S]+)$/.exec(message);
  return m ? { key: m[1].replace(/\[\d+\]/g, ''), text: m[2] } : null;
}
