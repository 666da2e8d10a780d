/**
 * Test hook, read only by the permission server (permission-server.ts) to play a slow or broken start:
 * a number delays its start by that many milliseconds (a loaded machine); `fail` makes it exit before
 * serving. The runner forwards it to the server's environment when LightWorker itself runs with it set;
 * unset, nothing changes.
 */
export const START_HOOK_ENV = 'LIGHTWORKER_TEST_PERMISSION_SERVER_START';

/** Apply the hook (see START_HOOK_ENV): resolves when the server may connect. */
export async function playStartHook(value = process.env[START_HOOK_ENV]): Promise<void> {
  if (!value) return;
  if (value === 'fail') {
    process.stderr.write(`lightworker permission server: exiting before serving (${START_HOOK_ENV}=fail)\n`);
    process.exit(1);
  }
  const ms = Number(value);
  if (ms > 0) await new Promise((r) => setTimeout(r, Math.min(ms, 120_000)));
}
