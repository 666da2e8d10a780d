import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api } from '../api/client.js';
import type { EventRow } from '../api/types.js';
import { useLive } from './live.js';
import { useNotices } from './notices.js';
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
 * Whether this browser can show a notification at all. `no_service`: it answers the permission question
 * (Permissions API `granted` or `prompt`) but `Notification.permission` disagrees and every notification
 * fails — chrome-headless-shell (the @sparticuz/chromium build) has no notification service, so
 * `requestPermission()` resolves `granted` while `Notification.permission` stays `denied`.
 */
export type NotifySupport = 'checking' | 'ok' | 'no_service' | 'unsupported';

/** The Permissions API's word for a `Notification.permission`: they agree in every browser that can notify. */
const SAME: Record<NotificationPermission, PermissionState> = { granted: 'granted', denied: 'denied', default: 'prompt' };

/**
 * Browser notifications for the headless console (the desktop app notifies natively): a task awaiting
 * approval at once (batched), failures and completions as [notifications] in config.toml says. Off until
 * the user turns it on here (which asks the browser's permission); only while the page is not in front.
 * In a browser that cannot notify (no_service, unsupported), turning them on announces the same things
 * inside the page instead (a notice that stays until followed, beside the title's count), and says why.
 */
export const useBrowserNotify = defineStore('browser-notify', () => {
  const permission = ref<Permission>(permissionNow());
  const support = ref<NotifySupport>(permission.value === 'unsupported' ? 'unsupported' : 'checking');
  const wanted = localStorage.getItem(KEY) === 'on';
  const enabled = ref(wanted && permission.value === 'granted');
  const sent = ref(0);
  /** Where what waits is announced while on: the browser's notifications, or notices in this page. */
  const delivery = computed<'browser' | 'page'>(() => (support.value === 'ok' || support.value === 'checking' ? 'browser' : 'page'));
  let pendingApprovals: string[] = [];
  let approvalTimer: ReturnType<typeof setTimeout> | null = null;
  let started = false;

  /** Compare the two permission answers once: a browser without a notification service gives them apart. */
  async function detect(): Promise<void> {
    if (support.value === 'unsupported') {
      enabled.value = wanted;
      return;
    }
    let state: PermissionState | null = null;
    try {
      state = (await navigator.permissions.query({ name: 'notifications' })).state;
    } catch {
      state = null;
    }
    const now = Notification.permission;
    support.value = state !== null && SAME[now] !== state ? 'no_service' : 'ok';
    permission.value = now;
    enabled.value = wanted && (support.value === 'no_service' || now === 'granted');
  }
  const detected = detect();

  async function enable(): Promise<void> {
    await detected;
    if (support.value !== 'unsupported') {
      const answer = await Notification.requestPermission();
      permission.value = Notification.permission;
      // Granted, yet the API still says otherwise: nothing the browser shows would ever appear.
      if (answer === 'granted' && Notification.permission !== 'granted') support.value = 'no_service';
    }
    enabled.value = delivery.value === 'page' || permission.value === 'granted';
    localStorage.setItem(KEY, enabled.value ? 'on' : 'off');
  }
  function disable(): void {
    enabled.value = false;
    localStorage.setItem(KEY, 'off');
  }

  function show(title: string, body: string, hash: string): void {
    if (!enabled.value) return;
    if (delivery.value === 'page') return announce(title, body, hash);
    if (permissionNow() !== 'granted') return;
    if (document.visibilityState === 'visible' && document.hasFocus()) return;
    const n = new Notification(title, { body, tag: hash, icon: './favicon.svg' });
    n.onclick = () => {
      window.focus();
      useRoute().go(hash);
      n.close();
    };
    // The browser took it but cannot show it: say so from now on, and announce this one in the page.
    n.onerror = () => {
      support.value = 'no_service';
      announce(title, body, hash);
    };
    sent.value++;
  }

  /** In the page: a notice that stays until followed or dismissed (the title already carries the count). */
  function announce(title: string, body: string, hash: string): void {
    useNotices().announce(`${title}: ${body}`, hash);
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

  return { permission, support, delivery, enabled, sent, enable, disable, start };
});
