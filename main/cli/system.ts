import type { Command } from 'commander';
import { writeDefaultConfig } from '../core/config.js';
import { ensureHomeDirs, resolveHome } from '../core/home.js';
import type { DoctorCheck } from '../commands/doctor.js';
import { Engine } from '../engine.js';
import type { EventRow } from '../store/events.js';
import { globals, withEngine } from './context.js';
import { out, printJson } from './output.js';

function eventLine(e: EventRow): string {
  const time = new Date(e.ts).toISOString().slice(11, 23);
  const p = e.payload;
  const summary =
    e.type === 'task.status' ? `${String(p.from)} → ${String(p.to)}${p.reason ? ` (${String(p.reason)})` : ''}` : JSON.stringify(p);
  return `${String(e.seq).padStart(6)}  ${time}  ${(e.taskId ?? '-').padEnd(26)}  ${e.type.padEnd(22)} ${summary}`;
}

export function registerSystemCommands(program: Command): void {
  program
    .command('init')
    .description('create the home folder, config.toml with documented defaults, and the database')
    .option('--force', 'rewrite config.toml with the defaults')
    .option('--json')
    .action((o, cmd: Command) => {
      const home = resolveHome(globals(cmd).home);
      ensureHomeDirs(home);
      const wrote = writeDefaultConfig(home.config, Boolean(o.force));
      new Engine({ home: home.root }).close();
      if (o.json) printJson({ home: home.root, config: home.config, database: home.db, configWritten: wrote });
      else out(`home ${home.root}\nconfig ${home.config}${wrote ? ' (written)' : ' (kept; --force rewrites it)'}\ndatabase ${home.db}`);
    });

  program
    .command('doctor')
    .description('check git, node, home, database, disk, workers')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('run_doctor', {})) as { ok: boolean; checks: DoctorCheck[] };
        if (o.json) printJson(r);
        else for (const c of r.checks) out(`${c.ok ? 'ok  ' : c.optional ? 'warn' : 'FAIL'}  ${c.name.padEnd(20)} ${c.detail}${!c.ok && c.fix ? `\n      fix: ${c.fix}` : ''}`);
        if (!r.ok) process.exitCode = 1;
      });
    });

  program
    .command('events')
    .description('the event log, oldest first')
    .option('--task <id>', "only this task's events")
    .option('--tree', "with --task: the task's whole tree")
    .option('--after <cursor>', 'events after this sequence number', (v) => Number(v), 0)
    .option('--limit <n>', 'page size', (v) => Number(v), 200)
    .option('-f, --follow', 'keep printing new events until interrupted')
    .option('--json', 'one JSON object per line')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        const print = (e: EventRow) => out(o.json ? JSON.stringify(e) : eventLine(e));
        let cursor: number = o.after;
        for (;;) {
          const page = (await call('get_events', { cursor, task_id: o.task, tree: Boolean(o.tree), limit: o.limit })) as { events: EventRow[]; cursor: number };
          page.events.forEach(print);
          cursor = page.cursor;
          if (page.events.length < o.limit || !o.follow) break;
        }
        if (!o.follow) return;
        ctx.engine.watch();
        await new Promise<void>((resolveDone) => {
          const pull = async () => {
            const page = (await call('get_events', { cursor, task_id: o.task, tree: Boolean(o.tree), limit: 1000 })) as { events: EventRow[]; cursor: number };
            page.events.forEach(print);
            cursor = page.cursor;
          };
          ctx.engine.events.on('change', () => void pull());
          const stop = () => resolveDone();
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
      });
    });

  const audit = program.command('audit').description('tamper checks on the event log');
  audit
    .command('verify')
    .description('walk the hash chain and report the first edited or deleted event')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('audit_verify', {})) as { ok: boolean; checked: number; broken?: { seq: number; reason: string } };
        if (o.json) printJson(r);
        else out(r.ok ? `ok: ${r.checked} events, chain intact` : `BROKEN at event ${r.broken!.seq}: ${r.broken!.reason} (${r.checked} events verified before it)`);
        if (!r.ok) process.exitCode = 1;
      });
    });
}
