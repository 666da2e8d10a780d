import { type Command } from 'commander';
import { AppError } from '../core/errors.js';
import { startSchedulerService } from '../app.js';
import { withEngine } from './context.js';
import { countInStatuses, resolveTaskId, taskName } from '../store/tasks.js';
import { getSetting } from '../store/settings.js';
import { err, out, printJson } from './output.js';
import { isIdle } from '../store/work-counts.js';
import { installGracefulShutdown } from '../scheduler/shutdown.js';
import { TERMINAL, type TaskStatus } from '../tasks/types.js';
import type { Engine } from '../engine.js';
import type { SchedulerService } from '../scheduler/service.js';
import type { EventRow } from '../store/events.js';
import { createStatusLine, describeCounts, type StatusLine } from './progress.js';
import { waitWithStatus } from './waiting.js';

const LIVE_STATES: TaskStatus[] = ['starting', 'running', 'verifying', 'queued', 'awaiting_approval'];

/**
 * Keep `run`'s status line current: the leader's role, what runs and waits in the home, and what ended
 * while this process ran (each end also printed as a line that stays). Returns the unsubscribe.
 */
function followRunStatus(engine: Engine, svc: SchedulerService, line: StatusLine): () => void {
  const ended: Record<string, number> = {};
  let pending: NodeJS.Timeout | null = null;
  // After each change (a background leader logs every line to runner.log): the live counts only, through the
  // status index, not scheduler_status, whose count of every status read the whole store at each redraw.
  const refresh = async () => {
    pending = null;
    let r: { counts: Record<string, number>; paused: boolean };
    try {
      r = { counts: countInStatuses(engine.db, LIVE_STATES), paused: getSetting<boolean>(engine.db, 'scheduler.paused') ?? false };
    } catch {
      return; // a store that cannot be read now: the next change redraws
    }
    const live = Object.fromEntries(LIVE_STATES.filter((k) => r.counts[k]).map((k) => [k, r.counts[k]]));
    const role = svc.scheduler ? (r.paused ? 'leading (paused)' : 'leading') : 'standby';
    const done = Object.keys(ended).length ? ` · ended here: ${describeCounts(ended)}` : '';
    line.set(`${role} · ${Object.keys(live).length ? describeCounts(live) : 'idle'}${done}`);
  };
  // Redraws are coalesced: a burst of events costs one status query.
  const schedule = () => {
    pending ??= setTimeout(() => void refresh(), 100);
  };
  const onEvent = (e: EventRow) => {
    if (e.type !== 'task.status' || !TERMINAL.has(e.payload.to as TaskStatus)) return;
    const to = String(e.payload.to);
    ended[to] = (ended[to] ?? 0) + 1;
    const why = e.payload.reason ? `  (${String(e.payload.reason).split('\n')[0]})` : '';
    const name = e.taskId ? taskName(engine.db, e.taskId) : undefined;
    line.note(`${e.taskId ?? '-'}  ${to}${why}${name ? `  ${name}` : ''}`);
  };
  engine.events.on('event', onEvent);
  engine.events.on('change', schedule);
  svc.on('leader', schedule);
  svc.on('standby', schedule);
  void refresh();
  return () => {
    if (pending) clearTimeout(pending);
    engine.events.off('event', onEvent);
    engine.events.off('change', schedule);
    svc.off('leader', schedule);
    svc.off('standby', schedule);
    line.stop();
  };
}

/**
 * A scheduler that cannot work says why (the store unreachable…) and when it works again. When the store
 * closed for good (its connection stopped answering) the service stops itself, killing what runs; once it
 * has, `stopped` (exit non-zero, so a supervisor or the person starts `again` once the store answers).
 */
export function sayTrouble(svc: SchedulerService, say: (text: string) => void, again: string, stopped: () => void): void {
  // A full file system says what it holds back itself; the retrying is the task ends', said there.
  svc.on('trouble', (message: string, info?: { full?: boolean }) => say(info?.full ? message : `cannot ${svc.scheduler ? 'keep leading' : 'lead'}: ${message}; retrying`));
  svc.on('store.writable', (message: string) => say(message));
  svc.on('recovered', () => say('working again'));
  svc.on('notice', (message: string) => say(message));
  svc.once('fatal', (e: Error) => {
    if (e instanceof AppError && e.code === 'store_damaged') say(`stopping, what ran here killed: ${e.message}`);
    else say(`stopping: ${e.message}; start \`${again}\` again once the store answers (another runner or the next start orphans what this one ran)`);
    void svc.stop().catch(() => undefined).finally(stopped);
  });
}

/** A commander parser for an option given in seconds (≥ 0); bad input names the option (exit 2). */
export function seconds(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new AppError('invalid_input', `${name}: expected a number of seconds, got "${v}"`, { field: name });
    return n;
  };
}

/**
 * `run --until-idle` cannot reach idle while the store takes no writes: once a full spell lasted `ms`, say
 * so and end (code 1) instead of waiting on a disk nobody may free. What still runs is killed; its tasks are
 * orphaned by the next leader.
 */
function giveUpWhenStalled(svc: SchedulerService, ms: number, say: (text: string) => void, stop: () => void): void {
  let timer: NodeJS.Timeout | null = null;
  svc.on('store.full', (e: Error) => {
    timer ??= setTimeout(() => {
      const n = svc.runningTasks().length;
      say(`cannot make progress: ${e.message} for ${Math.round(ms / 1000)} s; exiting${n ? `, killing ${n} running task${n === 1 ? '' : 's'} (the next leader marks them orphaned)` : ''}. Free space on that file system and run again`);
      void svc.stop({ killNow: true }).catch(() => undefined).finally(stop);
    }, ms);
    timer.unref();
  });
  svc.on('store.writable', () => {
    if (timer) clearTimeout(timer);
    timer = null;
  });
}

/** How long past `run --timeout` the process may take to record the ends of what it killed. */
const DEADLINE_SLACK_MS = 1500;

export function registerSchedulerCommands(program: Command): void {
  program
    .command('run')
    .description('run the scheduler in the foreground (leads, or waits as standby while another process leads)')
    .option('--until-idle', 'exit once nothing runs and nothing queued can run')
    .option('--timeout <seconds>', 'hard bound from the start of the process: SIGKILL what still runs and exit (code 1)', seconds('timeout'))
    .option('--stall-timeout <seconds>', 'with --until-idle: exit (code 1) once the store could not be written for this long (default 60)', seconds('stall-timeout'), 60)
    .option('--drain-timeout <seconds>', 'after a first Ctrl-C/SIGTERM, cancel running tasks after this long (default: wait until they end)', seconds('drain-timeout'))
    .option('-q, --quiet', 'no status line (stderr keeps only warnings)')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        const engine = ctx.engine;
        // The lease is visible to others as soon as the service takes it, before the graceful shutdown
        // below is installed: a signal in that window is held and delivered then, instead of killing us.
        const early: NodeJS.Signals[] = [];
        const hold = (sig: NodeJS.Signals) => {
          // A second signal while still starting (e.g. a slow takeover sweep): leave now, as a shell would.
          if (early.push(sig) > 1) process.exit(sig === 'SIGINT' ? 130 : 143);
        };
        process.on('SIGINT', hold);
        process.on('SIGTERM', hold);
        const svc = await startSchedulerService(engine, { onlyWithWork: Boolean(o.untilIdle) });
        const line = createStatusLine({ quiet: o.quiet });
        const stopStatus = o.quiet ? () => undefined : followRunStatus(engine, svc, line);
        let announcedStandby = false;
        // Announcements go through the status line, so a live line is cleared before they print.
        const say = (text: string) => (o.quiet ? err(text) : line.note(text));
        const announce = () => {
          const s = svc.status();
          // Standby without a leader: `--until-idle` found nothing to do, so it never asked for the lease.
          if (s.role === 'standby' && s.leader && !announcedStandby) {
            announcedStandby = true;
            say(`another process leads this home (pid ${s.leader?.pid ?? '?'} on ${s.leader?.hostname ?? '?'}); waiting as standby and taking over if it stops`);
          }
          if (s.role === 'leader') {
            if (announcedStandby) say('took over as leader');
            announcedStandby = false;
          }
        };
        announce();
        svc.on('leader', announce);
        svc.on('standby', announce);
        // A lease lost while leading (the store stopped answering, or this process froze): what it ran was
        // orphaned, so reaching idle afterwards is no success (exit 1, never 0).
        let lostLease = false;
        svc.on('lease.lost', () => (lostLease = true));
        const exitCode = await new Promise<number>((resolve) => {
          let settled = false;
          const finish = (code: number) => {
            if (settled) return;
            settled = true;
            clearInterval(idlePoll);
            if (hardTimer) clearTimeout(hardTimer);
            engine.events.off('change', onChange);
            shutdown.dispose();
            resolve(code);
          };
          // A task this process still runs is not over until its runner returns: after its end status is
          // stored it releases its workspace, and only then does its team take the next step.
          const onChange = () => {
            try {
              if (o.untilIdle && svc.runningTasks().length === 0 && isIdle(engine.db)) finish(0);
            } catch {
              // the store failed this look (the beat says so); the next event or poll looks again
            }
          };
          engine.events.on('change', onChange);
          // Catches idleness that no event announces (e.g. an empty queue at start).
          const idlePoll = setInterval(onChange, 250);
          const shutdown = installGracefulShutdown({ svc, say, drainTimeoutMs: o.drainTimeout !== undefined ? o.drainTimeout * 1000 : null, onStopped: finish });
          process.off('SIGINT', hold);
          process.off('SIGTERM', hold);
          for (const sig of early.splice(0)) process.emit(sig, sig);
          // A deadline is a deadline: counted from the start of this process, and what still runs at it is
          // SIGKILLed at once (no SIGTERM grace on top), so the process ends within about a second of it.
          const hardTimer = o.timeout !== undefined ? setTimeout(() => {
            const n = svc.runningTasks().length;
            say(`--timeout ${o.timeout}s reached; ${n ? `killing ${n} running task${n === 1 ? '' : 's'} at once` : 'stopping'}`);
            void svc.stop({ killNow: true }).then(() => finish(1));
            // Backstop: a run that still cannot record its end (e.g. a pipe held by an escaped process)
            // must not keep the command past its deadline; the next leader orphans what it left.
            setTimeout(() => {
              err(`--timeout ${o.timeout}s: could not stop cleanly within ${DEADLINE_SLACK_MS} ms; exiting (the next leader marks what was left as orphaned)`);
              process.exit(1);
            }, DEADLINE_SLACK_MS).unref();
          }, Math.max(0, o.timeout * 1000 - process.uptime() * 1000)) : null;
          sayTrouble(svc, say, 'lightworker run', () => finish(1));
          if (o.untilIdle) giveUpWhenStalled(svc, o.stallTimeout * 1000, say, () => finish(1));
          onChange();
        });
        // After a fatal store error the stop already failed to record what it ended: that was said above.
        const stopFailed = await svc.stop().then(() => null, (e: unknown) => e);
        if (stopFailed && exitCode === 0) throw stopFailed;
        if (exitCode === 0 && lostLease) say('this runner lost its lease while leading (the store stopped answering, or it was frozen): what it ran was orphaned; exiting 1 (lightworker retry <id> --strategy resume continues a task)');
        stopStatus();
        process.exitCode = exitCode === 0 && lostLease ? 1 : exitCode;
      });
    });

  program
    .command('wait')
    .description('wait until tasks end, or one needs a person (approval or an answer)')
    .argument('<ids...>', 'task ids (or unique prefixes of 6+ characters)')
    .option('--timeout <seconds>', 'give up after this long', seconds('timeout'), 3600)
    .option('-q, --quiet', 'no status line while waiting')
    .option('--json')
    .action(async (ids: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        const full = ids.map((id, i) => resolveTaskId(ctx.engine.db, id, ids.length > 1 ? `ids[${i}]` : 'id'));
        const r = await waitWithStatus(ctx.engine, call, full, o.timeout * 1000, createStatusLine({ quiet: o.quiet }));
        if (o.json) printJson(r);
        else {
          out(`${r.reason}`);
          if (r.next) out(`next: ${r.next}`);
          for (const t of r.tasks) out(`${t.id}  ${t.status}${t.waitingOn ? ` (waiting on approval of ${t.waitingOn.join(', ')})` : ''}${t.needs ? `  needs ${t.needs.kind}: ${t.needs.asks}` : ''}${t.error ? `  ${t.error.code}: ${t.error.message.split('\n')[0]}` : ''}`);
        }
        if (r.reason === 'timeout') process.exitCode = 1;
      });
    });

  program
    .command('status')
    .description('who leads this home, paused workers and task counts')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('scheduler_status', {});
        if (o.json) printJson(r);
        else {
          out(r.leader ? `leader: pid ${r.leader.pid} on ${r.leader.hostname}` : 'leader: none (start one with `lightworker run`)');
          out(`paused: ${r.paused}`);
          out(`tasks: ${Object.entries(r.counts).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`);
          for (const p of r.pausedWorkers) out(`${p.worker.startsWith('gateway:') ? `gateway ${p.worker.slice(8)}` : `worker ${p.worker}`} paused until ${new Date(p.until).toISOString()}: ${p.reason}`);
        }
      });
    });
}
