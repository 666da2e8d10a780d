import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api } from '../api/client.js';

export type Page = 'tasks' | 'board' | 'task' | 'team' | 'inbox' | 'new' | 'cache' | 'packs' | 'settings' | 'doctor';
export const PAGES: { page: Page; label: string; hash: string }[] = [
  { page: 'tasks', label: 'Tasks', hash: '#/tasks' },
  { page: 'inbox', label: 'Approvals', hash: '#/inbox' },
  { page: 'new', label: 'New', hash: '#/new' },
  { page: 'cache', label: 'Cache Lab', hash: '#/cache' },
  { page: 'settings', label: 'Settings', hash: '#/settings' },
  { page: 'doctor', label: 'Doctor', hash: '#/doctor' },
  // Last, so the keys 1–6 of the pages before it stay what people learned.
  { page: 'packs', label: 'Packs', hash: '#/packs' },
];

/** Hash routing (`#/tasks/<id>`): works the same from file:// in Electron and over HTTP. */
export const useRoute = defineStore('route', () => {
  const hash = ref(location.hash || '#/tasks');
  const parts = computed(() => hash.value.replace(/^#\/?/, '').split('/').filter(Boolean));
  const page = computed<Page>(() => {
    const [first, second] = parts.value;
    if (first === 'tasks' && second) return 'task';
    if (first === 'teams' && second) return 'team';
    // The board is the list's other view: reached from the list, not a page of its own in the side bar.
    if (first === 'board') return 'board';
    return (PAGES.find((p) => p.hash === `#/${first}`)?.page ?? 'tasks') as Page;
  });
  const taskId = computed(() => (parts.value[0] === 'tasks' ? (parts.value[1] ?? null) : null));
  const teamId = computed(() => (parts.value[0] === 'teams' ? (parts.value[1] ?? null) : null));

  function go(next: string): void {
    if (location.hash !== next) location.hash = next;
    hash.value = next;
  }
  window.addEventListener('hashchange', () => (hash.value = location.hash || '#/tasks'));
  api().onNavigate((h) => go(h));
  return { hash, page, taskId, teamId, go, openTask: (id: string) => go(`#/tasks/${id}`) };
});
