import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import type { CommandResult } from '../api/commands.js';
import { api, isUnknownCommand } from '../api/client.js';
import type { CostSummary, EventRow, PullView, ReviewCommentView, RouteRecord, TaskView, TreeNode } from '../api/types.js';
import { useLive } from './live.js';
import { useNotices } from './notices.js';
import { keyedDebounce } from './refresh.js';
import type { RouteHop } from '../components/route-words.js';

/** What get_task_diff returned, normalised: the unified diff text, or why there is none. */
export type DiffState = { kind: 'none' } | { kind: 'loading' } | { kind: 'unavailable'; why: string } | { kind: 'text'; text: string };

function diffText(data: unknown): string {
  if (typeof data === 'string') return data;
  const d = (data ?? {}) as Record<string, unknown>;
  for (const k of ['diff', 'patch', 'text', 'unified']) if (typeof d[k] === 'string') return d[k] as string;
  return '';
}

export type TaskAction = 'approve_task' | 'cancel_task' | 'retry_task' | 'accept_task';

/** What the user sees once an action went through (the buttons alone change too quietly). */
const DONE: Record<TaskAction, string> = {
  approve_task: 'Approved: the task is queued',
  cancel_task: 'Cancel requested',
  retry_task: 'Retry queued',
  accept_task: 'Accepted',
};

/** The notice after an action; accept names the commit and branch it made. */
function doneMessage(action: TaskAction, r: CommandResult<TaskAction>): string {
  if ('commit' in r && r.commit) return `Accepted: commit ${r.commit.slice(0, 10)}${r.branch ? ` on ${r.branch}` : ''}`;
  return DONE[action];
}

/** Events per page of the task's log. */
const EVENT_PAGE = 2000;

/** One task in full: the task, its event stream, its tree and its diff, live. */
export const useTaskDetail = defineStore('task-detail', () => {
  const id = ref<string | null>(null);
  const task = ref<TaskView | null>(null);
  const events = ref<EventRow[]>([]);
  const tree = ref<TreeNode[]>([]);
  const diff = ref<DiffState>({ kind: 'none' });
  const error = ref<string | null>(null);
  const busy = ref<TaskAction | null>(null);
  const cost = ref<{ task: CostSummary; root: CostSummary } | null>(null);
  /** The route the latest turn really used (gateway host, auth style, provider model, credential source). */
  const route = ref<RouteRecord | null>(null);
  /** The gateway it runs through now (decided at creation, moved by a reroute), as the provider knows the model. */
  const via = ref<RouteHop | null>(null);
  const editorBusy = ref(false);
  /** More events exist before the oldest one loaded. */
  const hasEarlier = ref(false);
  /** Why the log could not be loaded (shown in the log with a retry), or null. */
  const eventsError = ref<string | null>(null);
  let eventsRetry: ReturnType<typeof setTimeout> | null = null;
  let eventsTries = 0;
  /** The task's pull request (get_task's `pull`), and its review comments on the diff. */
  const pull = ref<PullView | null>(null);
  const comments = ref<ReviewCommentView[]>([]);
  const reviewBusy = ref(false);

  const verification = computed(() => events.value.filter((e) => /^verif/.test(e.type)));

  async function loadTask(): Promise<void> {
    if (!id.value) return;
    try {
      const r = await api().call('get_task', { id: id.value });
      task.value = r.task;
      pull.value = r.pull ?? null;
      cost.value = r.cost ?? null;
      route.value = r.route ?? null;
      via.value = r.via ?? null;
      error.value = null;
    } catch (err) {
      error.value = (err as Error).message;
    }
  }
  async function loadTree(): Promise<void> {
    if (!id.value) return;
    try {
      tree.value = (await api().call('get_task_tree', { id: id.value })).roots;
    } catch {
      tree.value = [];
    }
  }
  /** The newest events (a long run's log ends where it is now); live ones that raced the load are kept. */
  async function loadEvents(): Promise<void> {
    if (!id.value) return;
    const taskId = id.value;
    if (eventsRetry) clearTimeout(eventsRetry);
    eventsRetry = null;
    try {
      const r = await api().call('get_events', { task_id: taskId, limit: EVENT_PAGE, newest: true });
      if (id.value !== taskId) return;
      const last = r.events.at(-1)?.seq ?? 0;
      events.value = [...r.events, ...events.value.filter((e) => e.seq > last)];
      hasEarlier.value = r.events.length === EVENT_PAGE;
      eventsError.value = null;
      eventsTries = 0;
    } catch (err) {
      if (id.value !== taskId) return;
      // A log that failed to load must not look like a worker that printed nothing: say why, and try
      // again a few times on its own (a busy server answers the next time), then leave it to the button.
      eventsTries += 1;
      eventsError.value = (err as Error).message;
      if (eventsTries < 4) eventsRetry = setTimeout(() => void loadEvents(), 500 * 2 ** eventsTries);
    }
  }
  function retryEvents(): void {
    eventsTries = 0;
    void loadEvents();
  }
  /** Scrollback past the first page: the page of events before the oldest one shown. */
  async function loadEarlier(): Promise<void> {
    const first = events.value[0]?.seq;
    if (!id.value || first === undefined) return;
    const r = await api().call('get_events', { task_id: id.value, limit: EVENT_PAGE, newest: true, before: first });
    events.value = [...r.events, ...events.value];
    hasEarlier.value = r.events.length === EVENT_PAGE;
  }
  async function loadDiff(): Promise<void> {
    if (!id.value) return;
    diff.value = { kind: 'loading' };
    try {
      const text = diffText(await api().call('get_task_diff', { id: id.value }));
      diff.value = text.trim() ? { kind: 'text', text } : { kind: 'unavailable', why: 'no changes' };
    } catch (err) {
      diff.value = { kind: 'unavailable', why: isUnknownCommand(err) ? 'the diff viewer is not available yet (get_task_diff is missing)' : (err as Error).message };
    }
  }

  async function loadComments(): Promise<void> {
    if (!id.value) return;
    try {
      comments.value = (await api().call('list_review_comments', { id: id.value })).comments;
    } catch {
      comments.value = [];
    }
  }

  /** Record one comment on the diff's lines (review_task); `send` sends every unsent one as one follow-up turn. */
  async function review(c: { file: string; line: number; endLine: number; text: string } | null, send: boolean): Promise<void> {
    if (!id.value) return;
    reviewBusy.value = true;
    try {
      const input = { id: id.value, comments: c ? [{ file: c.file, line: c.line, ...(c.endLine !== c.line ? { end_line: c.endLine } : {}), text: c.text }] : [], send };
      const r = await api().call('review_task', input);
      task.value = r.task;
      comments.value = r.comments;
      if (send) useNotices().info(`Review sent: ${r.sent.length} comment${r.sent.length === 1 ? '' : 's'} as attempt ${r.task.attempt}`);
    } catch (err) {
      useNotices().error(err);
    } finally {
      reviewBusy.value = false;
    }
  }

  /** Push the task's branch and open its pull request (open_pull_request), or look at the forge now. */
  async function openPull(opts: { branch?: string; draft: boolean } | null): Promise<void> {
    if (!id.value) return;
    reviewBusy.value = true;
    try {
      if (opts) {
        const r = await api().call('open_pull_request', { id: id.value, ...(opts.branch ? { branch: opts.branch } : {}), draft: opts.draft });
        pull.value = r.pull;
        if (r.pull) useNotices().info(`Opened pull request #${r.pull.number} on ${r.pull.forge}`);
      } else pull.value = (await api().call('get_pull_request', { id: id.value, refresh: true })).pull;
    } catch (err) {
      useNotices().error(err);
    } finally {
      reviewBusy.value = false;
    }
  }

  async function open(taskId: string): Promise<void> {
    if (id.value !== taskId) {
      id.value = taskId;
      task.value = null;
      pull.value = null;
      comments.value = [];
      cost.value = null;
      hasEarlier.value = false;
      eventsError.value = null;
      eventsTries = 0;
      events.value = [];
      tree.value = [];
      diff.value = { kind: 'none' };
    }
    await Promise.all([loadTask(), loadEvents(), loadTree(), loadComments()]);
  }

  const refresh = keyedDebounce(80, () => void loadTask());
  const refreshTree = keyedDebounce(200, () => void loadTree());
  useLive().listen((e) => {
    if (!id.value) return;
    if (e.taskId === id.value) {
      if (!events.value.some((x) => x.seq === e.seq)) events.value = [...events.value, e];
      refresh('task');
      if (/^review\./.test(e.type)) void loadComments();
    }
    if (e.taskId && (e.type === 'task.status' || e.type === 'task.created') && task.value) refreshTree('tree');
  });

  async function act(action: TaskAction, extra: Record<string, unknown> = {}): Promise<void> {
    if (!id.value) return;
    busy.value = action;
    try {
      const r = await api().call(action, { id: id.value, ...extra });
      task.value = r.task;
      if (action === 'retry_task') await loadTask();
      useNotices().info(doneMessage(action, r));
    } catch (err) {
      useNotices().error(isUnknownCommand(err) ? `${action} is not available yet` : err);
    } finally {
      busy.value = null;
    }
  }

  /** Open the worktree (else the repository) in the user's editor, through the engine (argv, no shell). */
  async function openEditor(): Promise<void> {
    if (!id.value) return;
    editorBusy.value = true;
    try {
      const r = await api().call('open_in_editor', { id: id.value });
      useNotices().info(`Opened ${r.path} in ${r.argv[0].split('/').pop()}`);
    } catch (err) {
      useNotices().error(err);
    } finally {
      editorBusy.value = false;
    }
  }

  return { id, task, reload: loadTask, cost, route, via, events, hasEarlier, eventsError, retryEvents, tree, diff, error, busy, editorBusy, verification, pull, comments, reviewBusy, open, loadDiff, loadEarlier, act, openEditor, review, openPull };
});
