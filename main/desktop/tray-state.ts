import type { SchedulerStatus } from '../app.js';

export type TrayKind = 'idle' | 'running' | 'approval' | 'paused' | 'standby' | 'trouble';

export interface TrayState {
  kind: TrayKind;
  /** Which image in resources/ (tray-<icon>.png). */
  icon: 'idle' | 'running' | 'approval';
  tooltip: string;
  /** Short text for the menu's first, disabled line. */
  summary: string;
}

/**
 * What the tray shows for a scheduler status. Approval wins over running (a person is needed), paused
 * and standby are said explicitly so a quiet icon is never mistaken for "nothing to do". `trouble` (the
 * scheduler cannot work: its store is unreachable, or it stopped) wins over all of them, with the
 * attention icon, and its text first.
 */
export function computeTrayState(
  s: (Pick<SchedulerStatus, 'role' | 'paused' | 'running' | 'awaitingApproval' | 'queued'> & { waitingInput?: number }) | null,
  trouble: string | null = null,
): TrayState {
  if (trouble) {
    const summary = trouble.length > 200 ? `${trouble.slice(0, 199)}…` : trouble;
    return { kind: 'trouble', icon: 'approval', tooltip: `LightWorker — ${summary}`, summary };
  }
  if (!s) return { kind: 'idle', icon: 'idle', tooltip: 'LightWorker — starting', summary: 'starting' };
  const parts: string[] = [];
  if (s.running) parts.push(`running ${s.running}`);
  if (s.awaitingApproval) parts.push(`awaiting approval ${s.awaitingApproval}`);
  if (s.waitingInput) parts.push(`waiting for an answer ${s.waitingInput}`);
  if (s.queued) parts.push(`queued ${s.queued}`);
  // A question or permission request needs a person just like an approval does.
  let kind: TrayKind = s.awaitingApproval || s.waitingInput ? 'approval' : s.running ? 'running' : 'idle';
  if (s.role === 'standby') parts.unshift('standby (another process leads)');
  if (s.paused) parts.unshift('paused');
  if (kind === 'idle' && s.paused) kind = 'paused';
  if (kind === 'idle' && s.role === 'standby') kind = 'standby';
  const summary = parts.length ? parts.join(' · ') : 'idle';
  const icon = kind === 'approval' ? 'approval' : kind === 'running' ? 'running' : 'idle';
  return { kind, icon, tooltip: `LightWorker — ${summary}`, summary };
}
