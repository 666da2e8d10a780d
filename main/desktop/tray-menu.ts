import type { TrayState } from './tray-state.js';

export interface MenuItem {
  label?: string;
  type?: 'separator' | 'normal';
  enabled?: boolean;
  click?: () => void;
}

export interface TrayActions {
  openConsole(): void;
  openApprovals(): void;
  togglePause(): void;
  runDoctor(): void;
  copyMcpConfig(): void;
  quit(): void;
}

/** The tray menu as a plain template (Menu.buildFromTemplate takes it as is). */
export function buildTrayMenu(state: TrayState, paused: boolean, pending: number, a: TrayActions): MenuItem[] {
  return [
    { label: `LightWorker: ${state.summary}`, enabled: false },
    { type: 'separator' },
    { label: 'Open console', click: a.openConsole },
    { label: pending ? `Pending approvals (${pending})` : 'Pending approvals', click: a.openApprovals },
    { label: paused ? 'Resume scheduler' : 'Pause scheduler', click: a.togglePause },
    { label: 'Run doctor', click: a.runDoctor },
    { label: 'Copy MCP config', click: a.copyMcpConfig },
    { type: 'separator' },
    { label: 'Quit LightWorker', click: a.quit },
  ];
}
