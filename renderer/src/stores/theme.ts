import { defineStore } from 'pinia';
import { ref, watch } from 'vue';

export type Theme = 'light' | 'dark';

function initial(): Theme {
  const saved = localStorage.getItem('lightworker.theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Light or dark, remembered per browser; defaults to the system preference. */
export const useTheme = defineStore('theme', () => {
  const theme = ref<Theme>(initial());
  const apply = () => document.documentElement.setAttribute('data-theme', theme.value);
  apply();
  watch(theme, () => {
    localStorage.setItem('lightworker.theme', theme.value);
    apply();
  });
  return { theme, toggle: () => (theme.value = theme.value === 'dark' ? 'light' : 'dark') };
});
