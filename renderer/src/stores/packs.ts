import { defineStore } from 'pinia';
import { ref } from 'vue';
import type { CommandArgs, CommandResult } from '../api/commands.js';
import { api } from '../api/client.js';

export type PackInfo = CommandResult<'list_context_packs'>['packs'][number];
export type PackShown = CommandResult<'get_context_pack'>;

/** A pack name with its versions, newest first (list_context_packs gives one row per version). */
export interface PackGroup { name: string; newest: PackInfo; versions: PackInfo[] }

function groupPacks(rows: PackInfo[]): PackGroup[] {
  const by = new Map<string, PackInfo[]>();
  for (const r of rows) by.set(r.name, [...(by.get(r.name) ?? []), r]);
  return [...by].map(([name, versions]) => {
    const sorted = [...versions].sort((a, b) => b.createdAt - a.createdAt);
    return { name, newest: sorted[0], versions: sorted };
  });
}

/** Context Packs: the list, the one open (with its text), and add / remove through the engine's commands. */
export const usePacks = defineStore('packs', () => {
  const groups = ref<PackGroup[]>([]);
  const open = ref<PackShown | null>(null);
  const loadError = ref<string | null>(null);
  const busy = ref(false);

  async function load(): Promise<void> {
    try {
      groups.value = groupPacks((await api().call('list_context_packs', {})).packs);
      loadError.value = null;
    } catch (err) {
      loadError.value = (err as Error).message;
    }
  }

  /** Open `ref` (a name: its newest version; or name@version) with its text. */
  async function show(ref: string): Promise<void> {
    open.value = await api().call('get_context_pack', { name: ref, text: true });
  }

  async function run<T>(fn: () => Promise<T>): Promise<T> {
    busy.value = true;
    try {
      return await fn();
    } finally {
      busy.value = false;
    }
  }

  /** Store a version; the engine's refusal (naming name, version, text or file) is thrown to the form. */
  async function add(input: CommandArgs<'add_context_pack'>[0]): Promise<CommandResult<'add_context_pack'>> {
    return run(async () => {
      const r = await api().call('add_context_pack', input);
      await load();
      await show(`${r.name}@${r.version}`);
      return r;
    });
  }

  async function remove(ref: string): Promise<CommandResult<'remove_context_pack'>> {
    return run(async () => {
      const r = await api().call('remove_context_pack', { name: ref });
      await load();
      const name = r.removed[0]?.name;
      const left = groups.value.find((g) => g.name === name);
      if (left) await show(left.name);
      else open.value = null;
      return r;
    });
  }

  return { groups, open, loadError, busy, load, show, add, remove };
});
