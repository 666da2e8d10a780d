import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api } from '../api/client.js';
import type { EventRow } from '../api/types.js';
import { useLive } from './live.js';
import { useRoute } from './route.js';
import { useSettings } from './settings.js';

const KEY = 'lightworker.browser-notifications';
/** Approvals arriving within this window become one notification ("3 tasks await approval"). */
const APPROVAL_BATCH_MS = 1200;

type Permission = NotificationPermission | 'unsupported';

function permissionNow(): Permission {
  return typeof Notification === 'undefined' ? 'unsupported' : Notification.permission;
}

/**
 * Browser notifications for the headless console (the desktop app notifies natively): a task awaiting
 * approval at once (batched), failures and completions as [notifications] in config.toml says. Off until
 * the user turns it on here (which asks the browser's permission); only while the page is not in front.
 */
export const useBrowserNotify = defineStore('browser-notify', () => {
  const permission = ref<Permission>(permissionNow());
  const enabled = ref(localStorage.getItem(KEY) === 'on' && permission.value === 'granted');
  const sent = ref(0);
  let pendingApprovals: string[] = [];
  let approvalTimer: ReturnType<typeof setTimeout> | null = null;
  let started = false;

  async function enable(): Promise<void> {
    if (permission.value === 'unsupported') return;
    permission.value = await Notification.requestPermission();
    enabled.value = permission.value === 'granted';
    localStorage.setItem(KEY, enabled.value ? 'on' : 'off');
  }
  function disable(): void {
    enabled.value = false;
    localStorage.setItem(KEY, 'off');
  }

  function show(title: string, body: string, hash: string): void {
    if (!enabled.value || permissionNow() !== 'granted') return;
    if (document.visibilityState === 'visible' && document.hasFocus()) return;
    const n = new Notification(title, { body, tag: hash, icon: './favicon.svg' });
    n.onclick = () => {
      window.focus();
      useRoute().go(hash);
      n.close();
    };
    sent.value++;
  }

  async function nameOf(id: string): Promise<string> {
    try {
      return (await api().call('get_task', { id })).task.name;
    } catch {
      return id;
    }
  }

  function flushApprovals(): void {
    const ids = pendingApprovals;
    pendingApprovals = [];
    approvalTimer = null;
    if (ids.length === 1) void nameOf(ids[0]).then((name) => show('Approval needed', name, `#/tasks/${ids[0]}`));
    else if (ids.length > 1) show('Approvals needed', `${ids.length} tasks await approval`, '#/inbox');
  }

  async function onEvent(e: EventRow): Promise<void> {
    if (!enabled.value || !e.taskId) return;
    // A state change, or a task created straight into a state (awaiting approval under plan_only).
    const to = e.type === 'task.status' ? String(e.payload.to) : e.type === 'task.created' ? String(e.payload.status) : null;
    if (!to) return;
    const settings = useSettings();
    if (!settings.config) await settings.load();
    const want = settings.config?.notifications ?? { approvals: true, failures: true, completions: false };
    if (to === 'awaiting_approval' && want.approvals) {
      pendingApprovals.push(e.taskId);
      approvalTimer ??= setTimeout(flushApprovals, APPROVAL_BATCH_MS);
    } else if (['failed', 'timed_out', 'orphaned'].includes(to) && want.failures) {
      show(`Task ${to.replace('_', ' ')}`, await nameOf(e.taskId), `#/tasks/${e.taskId}`);
    } else if (to === 'completed' && want.completions) {
      show('Task completed', await nameOf(e.taskId), `#/tasks/${e.taskId}`);
    }
  }

  /** Listen once, in the browser only (Electron's main process notifies natively). */
  function start(): void {
    if (started || api().kind !== 'http') return;
    started = true;
    useLive().listen((e) => void onEvent(e));
  }

  return { permission, enabled, sent, enable, disable, start };
});
