// Types of build-sources.js (plain JS: bin/lightworker.js imports it before anything is built).
export const SOURCE_DIRS: string[];
export const SOURCE_FILES: string[];
export const OUTPUTS: string[];
export function stampPath(root: string): string;
export function listingPath(root: string): string;
export function listSources(root: string): string[];
export function listingOf(root: string, files: string[]): string;
export function builtAtAGlance(root: string): boolean;
