import { execFileSync } from 'node:child_process';
import { statfsSync } from 'node:fs';
import { z } from 'zod';
import { isWritable } from '../core/home.js';
import { SCHEMA_VERSION, schemaVersion } from '../store/db.js';
import { defineCommand, type CommandContext } from './table.js';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about a failed check. */
  fix?: string;
}

/** Extra checks contributed by other parts (workers, gateways, lock holder) register here. */
export type DoctorProbe = (ctx: CommandContext) => DoctorCheck[] | Promise<DoctorCheck[]>;
const probes: DoctorProbe[] = [];
export function registerDoctorProbe(p: DoctorProbe): void {
  probes.push(p);
}

function baseChecks(ctx: CommandContext): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  try {
    const v = execFileSync('git', ['--version'], { encoding: 'utf8', timeout: 5000 }).trim();
    checks.push({ name: 'git', ok: true, detail: v });
  } catch (err) {
    checks.push({ name: 'git', ok: false, detail: `git not runnable: ${(err as Error).message}`, fix: 'install git and put it on PATH' });
  }
  const major = Number(process.versions.node.split('.')[0]);
  checks.push({ name: 'node', ok: major >= 20, detail: `node ${process.versions.node}`, fix: major >= 20 ? undefined : 'use Node.js 20 or newer' });
  const home = ctx.engine.home.root;
  const writable = isWritable(home);
  checks.push({ name: 'home', ok: writable, detail: `${home} ${writable ? 'is writable' : 'is not writable'}`, fix: writable ? undefined : 'fix permissions or set LIGHTWORKER_HOME' });
  try {
    const quick = ctx.engine.db.pragma('quick_check', { simple: true }) as string;
    const v = schemaVersion(ctx.engine.db);
    const ok = quick === 'ok' && v === SCHEMA_VERSION;
    checks.push({ name: 'database', ok, detail: `${ctx.engine.home.db}: quick_check ${quick}, schema ${v}/${SCHEMA_VERSION}`, fix: ok ? undefined : 'restore the database from a backup' });
  } catch (err) {
    checks.push({ name: 'database', ok: false, detail: (err as Error).message, fix: 'restore the database from a backup' });
  }
  try {
    const s = statfsSync(home);
    const free = s.bavail * s.bsize;
    const total = s.blocks * s.bsize;
    const reserve = Math.max(2 * 1024 ** 3, total * 0.05);
    const ok = free > reserve;
    checks.push({
      name: 'disk',
      ok,
      detail: `${(free / 1024 ** 3).toFixed(1)} GiB free of ${(total / 1024 ** 3).toFixed(1)} GiB (reserve ${(reserve / 1024 ** 3).toFixed(1)} GiB)`,
      fix: ok ? undefined : 'free disk space or run `lightworker prune --apply`',
    });
  } catch (err) {
    checks.push({ name: 'disk', ok: false, detail: (err as Error).message });
  }
  return checks;
}

export const runDoctor = defineCommand({
  name: 'run_doctor',
  description: 'Check git, node, home, database, disk, workers and the scheduler lock.',
  input: z.strictObject({}),
  readOnly: true,
  async handler(ctx) {
    const checks = baseChecks(ctx);
    for (const p of probes) checks.push(...(await p(ctx)));
    return { ok: checks.every((c) => c.ok), checks };
  },
});
