import { defineStore } from 'pinia';
import { ref } from 'vue';

export interface Notice {
  id: number;
  kind: 'error' | 'info';
  text: string;
  /** Where clicking it goes (an announcement of what waits: the task or the inbox). */
  href?: string;
}

/** Short-lived messages (a failed action, "copied"); announcements of what waits stay until dismissed or followed. */
export const useNotices = defineStore('notices', () => {
  const items = ref<Notice[]>([]);
  let next = 1;
  function push(kind: Notice['kind'], text: string, href?: string): void {
    const id = next++;
    items.value = [...items.value, { id, kind, text, ...(href ? { href } : {}) }];
    // Something waiting for the person is still waiting after 3 s: it stays until they dismiss or open it.
    if (!href) setTimeout(() => dismiss(id), kind === 'error' ? 8000 : 3000);
  }
  function dismiss(id: number): void {
    items.value = items.value.filter((n) => n.id !== id);
  }
  return {
    items,
    dismiss,
    info: (text: string) => push('info', text),
    announce: (text: string, href: string) => push('info', text, href),
    error: (err: unknown) => push('error', err instanceof Error ? err.message : String(err)),
  };
});
