import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import type { Task } from '../../main/tasks/types.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import type { TestHome } from '../helpers/env.js';

/** What the human-in-the-loop tests read and run against one temp home (`home()` is read at each call). */
export function hitlHarness(home: () => TestHome) {
  const cli = (args: string[]): Promise<CliResult> => runCli(args, { home: home().home, timeoutMs: 60_000 });
  return {
    task: (id: string): Task => getTask(home().engine.db, id)!,
    events: (id: string, type: string) => listEvents(home().engine.db, { taskId: id, types: [type] }).events,
    cli,
    /** The JSON lines a mock `prompt_log` (or a recorder script) wrote. */
    lines: (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []),
    async runUntilIdle(): Promise<void> {
      const r = await cli(['run', '--until-idle']);
      expect(r.code, r.stderr).toBe(0);
    },
  };
}
