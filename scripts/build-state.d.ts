// Types of build-state.js (plain JS: bin/lightworker.js imports it before anything is built).
export const ROOT: string;
export function isCheckout(root?: string): boolean;
export function buildState(root?: string): { current: boolean; reason: string; hash?: string; fingerprint: string; keptOld?: boolean };
export function build(root?: string, opts?: { keepOld?: boolean }): Promise<void>;
export function ensureBuild(opts?: { root?: string; say?: (s: string) => void; keepOld?: boolean }): Promise<boolean>;
