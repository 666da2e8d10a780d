import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { captureStderr, exited } from '../helpers/procs.js';

// A process on the PostgreSQL store holds its connections in a worker thread (store/pg/bridge.ts). When
// the command is done the process must end by itself: no thread, connection or LISTEN keeps it alive.
// A process still running long after its work is done is killed and reported as such.
let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const EXIT_BOUND_MS = 30_000;

/** Run the CLI to its end: its exit code, or `lingered` when it was still alive EXIT_BOUND_MS later. */
async function runToEnd(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; lingered: boolean; stdout: string; stderr: string }> {
  const child = startCli(args, { home: h.home, env });
  const stderr = captureStderr(child);
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  let lingered = false;
  const timer = setTimeout(() => {
    lingered = true;
    child.kill('SIGKILL');
  }, EXIT_BOUND_MS);
  const code = await exited(child);
  clearTimeout(timer);
  return { code, lingered, stdout, stderr: stderr() };
}

describe('a CLI process on the PostgreSQL store', () => {
  it('lists the tasks another process created, then exits 0 by itself', async () => {
    const { task } = await h.call('delegate_task', { objective: 'seen from another process', workspace: h.repo, kind: 'explore' });
    const r = await runToEnd(['tasks', '--json']);
    expect(r.lingered).toBe(false);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { tasks: { id: string }[] }).tasks.map((t) => t.id)).toEqual([task.id]);
  });

  it('run --timeout (which also LISTENs for other processes’ commits) ends at its deadline', async () => {
    const r = await runToEnd(['run', '--timeout', '1']);
    expect(r.lingered).toBe(false);
    expect(r.stderr).toMatch(/--timeout 1s reached/);
    expect(r.code, r.stderr).toBe(1);
  });

  it('an unreachable server: a clear error, exit 1, and the password never printed', async () => {
    const r = await runToEnd(['tasks', '--json'], { LIGHTWORKER_DATABASE_URL: 'postgres://lw:Sup3rSecretPw@127.0.0.1:1/lightworker' });
    expect(r.lingered).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach the PostgreSQL store postgres:\/\/lw@127\.0\.0\.1:1\/lightworker/);
    expect(r.stderr + r.stdout).not.toContain('Sup3rSecretPw');
  });
});
