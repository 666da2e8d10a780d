import type { Db } from '../store/db.js';
import { foreignSealOf, homeKeyId } from '../tasks/secrets.js';

/**
 * Fleet tasks sealed with a key this runner lacks (another host's `[store] key_file`): each is left queued
 * for a runner that holds the key and never listed here again; the first of each foreign key is said once.
 */
export class ForeignSeals {
  /** Queued task → the key it was sealed with (bounded: the oldest is forgotten first). */
  private readonly unopenable = new Map<string, string>();
  private readonly foreignKeys = new Set<string>();

  constructor(
    /** The store as of now (read at each call: the engine's handle may be replaced). */
    private readonly db: () => Db,
    private readonly homeRoot: string,
    private readonly notice: (message: string) => void,
  ) {}

  /** Tasks to leave out of candidate lists. */
  ids(): string[] {
    return [...this.unopenable.keys()];
  }

  /** True when this runner cannot open the task's secrets: it leaves it (and says so, once per key). */
  leaves(id: string): boolean {
    const foreign = foreignSealOf(this.db(), this.homeRoot, id);
    if (foreign === null) return false;
    if (this.unopenable.size >= 1000) this.unopenable.delete(this.unopenable.keys().next().value!);
    this.unopenable.set(id, foreign);
    if (!this.foreignKeys.has(foreign)) {
      this.foreignKeys.add(foreign);
      this.notice(`this runner cannot open tasks sealed with key ${foreign} (its key is ${homeKeyId(this.homeRoot)}): it leaves them for a runner that can (${id} first); give every host the same [store] key_file`);
    }
    return true;
  }
}
