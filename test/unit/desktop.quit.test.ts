import { describe, expect, it } from 'vitest';
import { confirmQuit, createQuitGuard, type MessageBoxLike } from '../../main/desktop/quit-guard.js';
import type { RunningTask } from '../../main/scheduler/service.js';

type BoxOptions = Parameters<MessageBoxLike['showMessageBox']>[0];

/** A fake Electron dialog that answers with the button labelled `answer` and records what it showed. */
function fakeDialog(answer: string | null) {
  const shown: BoxOptions[] = [];
  const dialog: MessageBoxLike = {
    async showMessageBox(opts) {
      shown.push(opts);
      return { response: answer === null ? opts.cancelId : opts.buttons.indexOf(answer) };
    },
  };
  return { dialog, shown };
}

const TASKS: RunningTask[] = [
  { id: '01JTASKAAAAAAAAAAAAAAAAAAA', name: 'migrate the billing tables', worker: 'codex' },
  { id: '01JTASKBBBBBBBBBBBBBBBBBBB', name: 'review auth', worker: 'claude-code' },
];

function harness(answer: string | null, running: RunningTask[] = TASKS) {
  const { dialog, shown } = fakeDialog(answer);
  const log: string[] = [];
  const guard = createQuitGuard({ dialog, running: () => running, keepInTray: () => log.push('tray'), quit: () => log.push('quit') });
  const event = () => {
    const e = { prevented: false, preventDefault() { e.prevented = true; } };
    return e;
  };
  return { guard, shown, log, event };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('desktop quit with running work', () => {
  it('asks, naming how many tasks run and which, with the three choices', async () => {
    expect(await confirmQuit(fakeDialog('Cancel').dialog, TASKS)).toBe('cancel');
    expect(await confirmQuit(fakeDialog('Quit and stop them').dialog, TASKS)).toBe('quit');
    const d = fakeDialog('Keep running in tray');
    expect(await confirmQuit(d.dialog, TASKS)).toBe('tray');
    expect(d.shown[0].message).toBe('2 tasks are running.');
    expect(d.shown[0].buttons).toEqual(['Quit and stop them', 'Keep running in tray', 'Cancel']);
    expect(d.shown[0].detail).toContain('01JTASKAAAAAAAAAAAAAAAAAAA "migrate the billing tables" (codex)');
    expect(d.shown[0].detail).toContain('--strategy resume');
  });

  it('"Quit and stop them" holds the first quit, then lets the confirmed one through', async () => {
    const h = harness('Quit and stop them');
    const first = h.event();
    h.guard.beforeQuit(first);
    expect(first.prevented).toBe(true);
    expect(h.guard.confirmed).toBe(false);
    await settle();
    expect(h.log).toEqual(['quit']);
    expect(h.guard.confirmed).toBe(true);
    const again = h.event();
    h.guard.beforeQuit(again);
    expect(again.prevented).toBe(false);
    expect(h.shown).toHaveLength(1);
  });

  it('"Keep running in tray" closes the windows and does not quit', async () => {
    const h = harness('Keep running in tray');
    const e = h.event();
    h.guard.beforeQuit(e);
    await settle();
    expect(e.prevented).toBe(true);
    expect(h.log).toEqual(['tray']);
    expect(h.guard.confirmed).toBe(false);
  });

  it('"Cancel" (or closing the box) does nothing, and the next quit asks again', async () => {
    const h = harness(null);
    h.guard.beforeQuit(h.event());
    await settle();
    expect(h.log).toEqual([]);
    h.guard.beforeQuit(h.event());
    await settle();
    expect(h.shown).toHaveLength(2);
  });

  it('quits without asking when nothing runs', async () => {
    const h = harness('Cancel', []);
    const e = h.event();
    h.guard.beforeQuit(e);
    await settle();
    expect(e.prevented).toBe(false);
    expect(h.shown).toHaveLength(0);
    expect(h.guard.confirmed).toBe(true);
  });

  it('a second quit while the box is open does not open another', async () => {
    const { shown } = fakeDialog(null);
    let answer!: (r: { response: number }) => void;
    const dialog: MessageBoxLike = { showMessageBox: (opts) => (shown.push(opts), new Promise((r) => (answer = r))) };
    const guard = createQuitGuard({ dialog, running: () => TASKS, keepInTray: () => undefined, quit: () => undefined });
    guard.beforeQuit({ preventDefault() {} });
    guard.beforeQuit({ preventDefault() {} });
    expect(shown).toHaveLength(1);
    answer({ response: 2 });
    await settle();
  });
});
