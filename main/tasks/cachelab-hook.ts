import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import type { Task } from './types.js';

/** The fields of a task its cache cohort is computed from, and its id. */
export type CohortFields = Pick<Task, 'id' | 'worker' | 'kind' | 'model' | 'reasoningEffort' | 'profile' | 'gateway' | 'contextPack'>;

/**
 * The Cache Lab's part in creating and re-routing tasks, handed in by the caller (cachelab/ sits above
 * tasks/; its `taskCachelab` is the one implementation): file a task under its cache cohort, at creation and
 * whenever its route changes, and pin a context pack reference to `name@version`.
 */
export interface TaskCachelab {
  assignCohort(db: Db, config: Config, t: CohortFields): string;
  resolvePackRef(db: Db, ref: string | null, field?: string): string | null;
}
