import { afterEach, beforeEach, expect, it } from 'vitest';
import { runTree } from '../../main/platform/proc/run-tree.js';
import { tempDir } from '../helpers/env.js';

// After a worker exits, what is still coming down its pipes is read to the end: a leader too busy to read
// for a while (a loaded machine; each chunk parsed before the next is read) must not cut a worker's last
// lines off at a fixed half second. Only a pipe that stays quiet is given up.

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir('lw-drain-');
});
afterEach(() => t.cleanup());

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

/** Block this thread for `ms`, as a starved leader parsing a chunk would. */
function busy(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // spin
  }
}

it('keeps reading after the exit while output still arrives, however slowly it is read', async () => {
  // The process exits at once; what it started writes 8 lines, one every 250 ms, on the inherited stdout.
  const script = 'i=1; (while [ $i -le 8 ]; do echo "line $i"; i=$((i+1)); sleep 0.25; done) & exit 0';
  let out = '';
  const end = await runTree('sh', ['-c', script], {
    cwd: t.dir,
    env,
    graceMs: 100,
    onStdout: (b) => {
      out += b.toString();
      busy(400); // each chunk costs the reader most of the quiet window
    },
  });
  expect(end.exitCode).toBe(0);
  expect(out.trim().split('\n')).toEqual(Array.from({ length: 8 }, (_, i) => `line ${i + 1}`));
});

it('gives up on a pipe a background child holds open without writing, after the quiet window', async () => {
  let out = '';
  const end = await runTree('sh', ['-c', 'echo done; sleep 600 & exit 0'], { cwd: t.dir, env, graceMs: 100, onStdout: (b) => (out += b.toString()) });
  expect(end.exitCode).toBe(0);
  expect(out).toBe('done\n');
});
