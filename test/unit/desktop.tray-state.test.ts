import { describe, expect, it } from 'vitest';
import { buildTrayMenu } from '../../main/desktop/tray-menu.js';
import { computeTrayState } from '../../main/desktop/tray-state.js';

const base = { role: 'leader' as const, paused: false, running: 0, awaitingApproval: 0, queued: 0 };

describe('tray state', () => {
  it('is idle with nothing to do', () => {
    expect(computeTrayState(base)).toMatchObject({ kind: 'idle', icon: 'idle', tooltip: 'LightWorker — idle' });
  });
  it('shows running N', () => {
    expect(computeTrayState({ ...base, running: 3 })).toMatchObject({ kind: 'running', icon: 'running', tooltip: 'LightWorker — running 3' });
  });
  it('puts awaiting approval first in the icon, and names both counts', () => {
    const s = computeTrayState({ ...base, running: 2, awaitingApproval: 4 });
    expect(s.icon).toBe('approval');
    expect(s.tooltip).toBe('LightWorker — running 2 · awaiting approval 4');
  });
  it('says paused and standby explicitly', () => {
    expect(computeTrayState({ ...base, paused: true, queued: 5 })).toMatchObject({ kind: 'paused', tooltip: 'LightWorker — paused · queued 5' });
    expect(computeTrayState({ ...base, role: 'standby' }).tooltip).toContain('standby');
  });
  it('a scheduler that cannot work shows its trouble first, with the attention icon, even when the status cannot be read', () => {
    const said = 'cannot schedule: cannot reach the PostgreSQL store postgres://lw@db:5432/lw (schema fleet): connect ECONNREFUSED; retrying';
    expect(computeTrayState({ ...base, running: 2 }, said)).toMatchObject({ kind: 'trouble', icon: 'approval', tooltip: `LightWorker — ${said}`, summary: said });
    expect(computeTrayState(null, said).kind).toBe('trouble');
    expect(computeTrayState(null, 'x'.repeat(500)).summary).toHaveLength(200);
    // Fine again: back to the counts.
    expect(computeTrayState({ ...base, running: 2 }, null)).toMatchObject({ kind: 'running' });
  });
  it('menu offers every action and flips pause/resume', () => {
    const calls: string[] = [];
    const actions = Object.fromEntries(['openConsole', 'openApprovals', 'togglePause', 'runDoctor', 'copyMcpConfig', 'quit'].map((k) => [k, () => calls.push(k)])) as never;
    const menu = buildTrayMenu(computeTrayState({ ...base, awaitingApproval: 2 }), false, 2, actions);
    const labels = menu.map((m) => m.label).filter(Boolean);
    expect(labels).toEqual(['LightWorker: awaiting approval 2', 'Open console', 'Pending approvals (2)', 'Pause scheduler', 'Run doctor', 'Copy MCP config', 'Quit LightWorker']);
    for (const m of menu) m.click?.();
    expect(calls).toEqual(['openConsole', 'openApprovals', 'togglePause', 'runDoctor', 'copyMcpConfig', 'quit']);
    expect(buildTrayMenu(computeTrayState({ ...base, paused: true }), true, 0, actions).map((m) => m.label)).toContain('Resume scheduler');
  });

  it('a task waiting for an answer needs a person like an approval does', () => {
    expect(computeTrayState({ ...base, running: 1, waitingInput: 2 })).toMatchObject({ kind: 'approval', icon: 'approval', tooltip: 'LightWorker — running 1 · waiting for an answer 2' });
  });
});
