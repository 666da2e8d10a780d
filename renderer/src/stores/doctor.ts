import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api } from '../api/client.js';
import type { DoctorCheck } from '../api/types.js';

/** One click runs every check; each failed one carries its fix. */
export const useDoctor = defineStore('doctor', () => {
  const checks = ref<DoctorCheck[]>([]);
  const ok = ref<boolean | null>(null);
  const running = ref(false);
  const error = ref<string | null>(null);
  const ranAt = ref<number | null>(null);

  async function run(): Promise<void> {
    running.value = true;
    try {
      const r = await api().call('run_doctor');
      checks.value = r.checks;
      ok.value = r.ok;
      ranAt.value = Date.now();
      error.value = null;
    } catch (err) {
      error.value = (err as Error).message;
    } finally {
      running.value = false;
    }
  }
  return { checks, ok, running, error, ranAt, run };
});
