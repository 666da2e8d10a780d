import type { SpawnOptions } from 'node:child_process';

export interface PidMark {
  pid: number;
  forks: number;
}
export function statFields(stat: string): string[];
export function readProcNumber(path: string, pattern?: RegExp): number | null;
export function markPids(): PidMark | null;
export function linuxStartTime(pid: number): string | null;
export function spawnOptions(req: { cwd: string; env: Record<string, string>; stdin: boolean; detached: boolean }): SpawnOptions;
