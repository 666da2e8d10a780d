import type { Command } from 'commander';
import { resolve } from 'node:path';
import { writeDefaultConfig } from '../core/config.js';
import { ensureHomeDirs, resolveHome } from '../core/home.js';
import { setStoreAside } from '../store/identity.js';
import type { DoctorCheck } from '../commands/doctor.js';
import { openEngine } from '../app.js';
import type { Engine } from '../engine.js';
import type { AuditResult, EventRow } from '../store/events.js';
import { globals, withEngine } from './context.js';
import { err, out, printJson } from './output.js';
import { AppError, isAppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import { parseIntOption } from './tasks.js';
import { commandText, formatDuration } from './verification.js';
import { followEvents, type FollowOptions } from '../scheduler/follow.js';

function eventLine(e: EventRow): string {
  const time = new Date(e.ts).toISOString().slice(11, 23);
  const p = e.payload;
  const summary =
    e.type === 'task.status'
      ? `${String(p.from)} → ${String(p.to)}${p.reason ? ` (${String(p.reason)})` : ''}`
      : e.type === 'verify.command'
        ? `$ ${commandText(p.command)} → ${p.timedOut ? 'timed out' : `exit ${String(p.exitCode)}`} in ${formatDuration(Number(p.durationMs ?? 0))} (output: lightworker show ${e.taskId ?? ''})`
        : JSON.stringify(p);
  return `${String(e.seq).padStart(6)}  ${time}  ${(e.taskId ?? '-').padEnd(26)}  ${e.type.padEnd(22)} ${summary}`;
}

interface EventPage {
  events: EventRow[];
  cursor: number;
  more: boolean;
}

/**
 * Print new events (the library's follower: this process's writes at once, other processes' by polling)
 * until Ctrl-C or SIGTERM, then exit 0.
 */
async function followUntilSignal(engine: Engine, opts: FollowOptions, print: (e: EventRow) => void): Promise<void> {
  // The engine's poll timer is unref'd; without a handle of our own Node sees nothing pending, abandons
  // the await and exits with 13 ("unsettled top-level await") about a second in.
  const keepAlive = setInterval(() => {}, 1 << 30);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for await (const e of followEvents(engine, () => false, { ...opts, signal: stop.signal })) print(e);
  } finally {
    clearInterval(keepAlive);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  process.exitCode = 0;
}

interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

/**
 * The home could not be opened (an unreachable PostgreSQL server, an invalid config.toml or store
 * setting, a schema from a newer LightWorker): doctor still answers, with that as its failed check.
 */
function openFailure(e: unknown): DoctorReport {
  if (!isAppError(e)) throw e;
  const config = e.code === 'invalid_input';
  const fix = config
    ? 'fix the setting the message names (config.toml, or LIGHTWORKER_DATABASE_URL)'
    : typeof e.details?.fix === 'string'
      ? e.details.fix
      : e.code === 'unavailable'
        ? 'start the PostgreSQL server, or point LIGHTWORKER_DATABASE_URL / [store] at one that runs'
        : undefined;
  return { ok: false, checks: [{ name: config ? 'config' : 'database', ok: false, detail: redactText(e.message), fix }] };
}

/** The trees gc deleted, as their signed tombstones name them (the newest ones). */
function tombstoneLines(r: AuditResult): string {
  if (!r.tombstones) return '';
  const { count, trees } = r.tombstones;
  const lines = trees.map((t) => `\n  tombstone at event ${t.seq}: tree ${t.rootId} (${t.tasks} task(s)) deleted by gc ${new Date(t.ts).toISOString()}`);
  return `; ${count} tree(s) deleted by gc, each with a signed tombstone${count > trees.length ? ` (the newest ${trees.length}:)` : ':'}${lines.join('')}`;
}

export function registerSystemCommands(program: Command): void {
  program
    .command('init')
    .description('create the home folder, config.toml with documented defaults, and the database')
    .option('--force', 'rewrite config.toml with the defaults')
    .option('--new-store', 'set the store aside (missing, damaged or not: its files are renamed, never deleted) and start an empty one')
    .option('--json')
    .action((o, cmd: Command) => {
      const home = resolveHome(globals(cmd).home);
      ensureHomeDirs(home);
      const wrote = writeDefaultConfig(home.config, Boolean(o.force));
      const setAside = o.newStore ? setStoreAside(home) : [];
      openEngine({ home: home.root }).close();
      if (o.json) printJson({ home: home.root, config: home.config, database: home.db, configWritten: wrote, setAside });
      else {
        out(`home ${home.root}\nconfig ${home.config}${wrote ? ' (written)' : ' (kept; --force rewrites it)'}\ndatabase ${home.db}${o.newStore ? ' (new, empty)' : ''}`);
        for (const f of setAside) out(`set aside ${f}`);
      }
    });

  program
    .command('doctor')
    .description('check git, node, home, database, disk, workers')
    .option('--json')
    .action(async (o, cmd: Command) => {
      const r = await withEngine(cmd, async (call) => (await call('run_doctor', {})) as DoctorReport, openFailure);
      if (o.json) printJson(r);
      else for (const c of r.checks) out(`${c.ok ? 'ok  ' : c.optional ? 'warn' : 'FAIL'}  ${c.name.padEnd(20)} ${c.detail}${!c.ok && c.fix ? `\n      fix: ${c.fix}` : ''}`);
      if (!r.ok) process.exitCode = 1;
    });

  program
    .command('backup')
    .description("a consistent copy of the home's store while runners work (SQLite's online backup), checked before it is kept")
    .argument('<file>', 'where the copy goes (refused if it exists, unless --force)')
    .option('--force', 'replace an existing file')
    .option('--json')
    .addHelpText('after', '\nRestore: stop every LightWorker process of the home, then copy the file over <home>/lightworker.db\n(and remove lightworker.db-wal and lightworker.db-shm). A PostgreSQL store is backed up with pg_dump instead.')
    .action(async (file: string, o, cmd: Command) => {
      const r = await withEngine(cmd, (call) => call('backup_home', { file: resolve(file), force: Boolean(o.force) }));
      if (o.json) printJson(r);
      else out(`backup ${r.file}: ${r.tasks} tasks, ${r.events} events, ${(r.bytes / 1024 / 1024).toFixed(1)} MiB in ${r.durationMs} ms (integrity ok, audit chain ok: ${r.audit.checked} events)`);
    });

  program
    .command('events')
    .description('the event log: the newest events (newest at the bottom, like tail), or pages from a cursor')
    .option('--task <id>', "only this task's events (a unique id prefix of 6+ characters will do)")
    .option('--tree', "with --task: the task's whole tree")
    .option('--after <cursor>', 'oldest first from here: events with a sequence number above this (0 = the start)', parseIntOption('after'))
    .option('--before <cursor>', 'the newest events with a sequence number below this (pages back)', parseIntOption('before'))
    .option('--limit <n>', 'at most this many events (1–5000)', parseIntOption('limit'), 200)
    .option('-f, --follow', 'then keep printing new events as they happen, until Ctrl-C')
    .option('--json', 'one JSON object per line')
    .addHelpText('after', '\nWithout --after or --before, shows the newest --limit events. A note on stderr says when more exist\nand how to see them; the first column is the sequence number (the cursor).')
    .action(async (o, cmd: Command) => {
      if (o.after !== undefined && o.before !== undefined) throw new AppError('invalid_input', '--before: give --after or --before, not both', { field: 'before' });
      if (o.follow && o.before !== undefined) throw new AppError('invalid_input', '--before: cannot be combined with --follow', { field: 'before' });
      await withEngine(cmd, async (call, ctx) => {
        const print = (e: EventRow) => out(o.json ? JSON.stringify(e) : eventLine(e));
        const filter = { task_id: o.task, tree: Boolean(o.tree) };
        const fromStart = o.after !== undefined;
        const page = (await call('get_events', { ...filter, cursor: o.after ?? 0, before: o.before, newest: !fromStart, limit: o.limit })) as EventPage;
        page.events.forEach(print);
        const cursor = page.cursor;
        if (page.more && fromStart) err(`… more events after ${cursor}: continue with --after ${cursor} (or raise --limit)`);
        else if (page.more) err(`… earlier events not shown: page back with --before ${page.events[0].seq} (or raise --limit; --after 0 reads from the start)`);
        if (!o.follow) return;
        // The follower replays what is left after this page (all of it, when reading from a cursor), then waits.
        const task = o.task ? ((await call('get_task', { id: o.task })) as { task: { id: string; rootId: string } }).task : null;
        await followUntilSignal(ctx.engine, { after: page.cursor, taskId: o.tree ? undefined : task?.id, rootId: o.tree ? task?.rootId : undefined }, print);
      });
    });

  const audit = program.command('audit').description('tamper checks on the event log');
  audit
    .command('verify')
    .description('walk the hash chain and report the first edited or deleted event')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('audit_verify', {})) as AuditResult;
        if (o.json) printJson(r);
        else out(r.ok ? `ok: ${r.checked} events, chain intact${tombstoneLines(r)}` : `BROKEN at event ${r.broken!.seq}: ${r.broken!.reason} (${r.checked} events verified before it)`);
        if (!r.ok) process.exitCode = 1;
      });
    });
}
