import { defineStore } from 'pinia';
import { ref } from 'vue';

export interface Notice {
  id: number;
  kind: 'error' | 'info';
  text: string;
}

/** Short-lived messages (a failed action, "copied"). */
export const useNotices = defineStore('notices', () => {
  const items = ref<Notice[]>([]);
  let next = 1;
  function push(kind: Notice['kind'], text: string): void {
    const id = next++;
    items.value = [...items.value, { id, kind, text }];
    setTimeout(() => dismiss(id), kind === 'error' ? 8000 : 3000);
  }
  function dismiss(id: number): void {
    items.value = items.value.filter((n) => n.id !== id);
  }
  return {
    items,
    dismiss,
    info: (text: string) => push('info', text),
    error: (err: unknown) => push('error', err instanceof Error ? err.message : String(err)),
  };
});
