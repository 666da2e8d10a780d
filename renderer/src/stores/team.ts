import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api } from '../api/client.js';
import type { TeamReport } from '../api/types.js';
import { useLive } from './live.js';
import { useNotices } from './notices.js';
import { keyedDebounce } from './refresh.js';

export type TeamAction = 'accept' | 'cancel';

/** One team (team_report, given any of its tasks), live: members, rounds, verdicts, the winner; accept and cancel. */
export const useTeam = defineStore('team', () => {
  const id = ref<string | null>(null);
  const report = ref<TeamReport | null>(null);
  const error = ref<string | null>(null);
  /** The acceptable task's verify commands: none means accept_team must say `unverified`. */
  const acceptableVerified = ref<boolean | null>(null);
  const confirming = ref<TeamAction | null>(null);
  const busy = ref(false);
  const actionError = ref<string | null>(null);
  const outcome = ref<string | null>(null);

  async function load(): Promise<void> {
    if (!id.value) return;
    const asked = id.value;
    try {
      const r = await api().call('team_report', { id: asked });
      if (id.value !== asked) return;
      report.value = r;
      error.value = null;
      acceptableVerified.value = r.acceptable ? (await api().call('get_task', { id: r.acceptable })).task.verify.length > 0 : null;
    } catch (err) {
      if (id.value === asked) error.value = (err as Error).message;
    }
  }

  async function open(teamId: string): Promise<void> {
    if (id.value !== teamId) {
      id.value = teamId;
      report.value = null;
      error.value = null;
      confirming.value = null;
      actionError.value = null;
      outcome.value = null;
    }
    await load();
  }

  const refresh = keyedDebounce(150, () => void load());
  useLive().listen((e) => {
    const r = report.value;
    if (!r || !e.taskId) return;
    // A member moved, the team ended or went on (events on its root), or a next round was created.
    // An integration's sources move too (finishing lets it run).
    if (e.taskId === r.rootId || r.members.some((m) => m.id === e.taskId) || r.sources.some((s) => s.id === e.taskId) || e.type === 'task.created') refresh('team');
  });

  function ask(action: TeamAction): void {
    confirming.value = action;
    actionError.value = null;
  }

  async function confirm(): Promise<void> {
    const r = report.value;
    const action = confirming.value;
    if (!r || !action) return;
    busy.value = true;
    actionError.value = null;
    try {
      if (action === 'accept') {
        const a = await api().call('accept_team', { id: r.rootId, ...(acceptableVerified.value === false ? { unverified: true } : {}) });
        outcome.value = `Accepted the team's result (${a.accepted}): ${a.commit ? `commit ${a.commit.slice(0, 10)}` : 'nothing to commit'}${a.branch ? ` on ${a.branch}` : ''}`;
      } else {
        const c = await api().call('cancel_team', { id: r.rootId });
        outcome.value = c.cancelled.length ? `Cancel requested for ${c.cancelled.length} member${c.cancelled.length === 1 ? '' : 's'}` : 'Nothing to cancel: every member had ended';
      }
      useNotices().info(outcome.value);
      confirming.value = null;
      await load();
    } catch (err) {
      actionError.value = (err as Error).message;
    } finally {
      busy.value = false;
    }
  }

  return { id, report, error, acceptableVerified, confirming, busy, actionError, outcome, open, load, ask, confirm, close: () => (confirming.value = null) };
});
