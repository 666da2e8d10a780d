import type { TaskCachelab } from '../tasks/cachelab-hook.js';
import { assignCohort } from './cohort.js';
import { resolvePackRef } from './context-packs.js';

/** What task creation, follow-ups and retries need of the Cache Lab (tasks/cachelab-hook.ts). */
export const taskCachelab: TaskCachelab = { assignCohort, resolvePackRef };
