import type { NormalizedEvent } from '../workers/adapter.js';

// What a task attempt stores of its workers' output. A worker that prints 100k lines must not become 100k
// event rows (each one hashed, indexed and pushed to every console), nor a flood a database of gigabytes:
// plain output lines that arrive together merge into one message, and past `[output] max_events` output
// events are counted, not stored. Usage and the turn's end are never lost: past the cap usage is summed
// into one event, and a few start/end events (and warnings) still go through.

/** A merged message keeps at most this many characters (what any event keeps of a text). */
export const MERGED_TEXT_CHARS = 4000;
/** Start, completion and failure events stored past the cap (a hostile worker could print them forever). */
const LIFECYCLE_PAST_CAP = 16;

type Usage = Extract<NormalizedEvent, { type: 'worker.usage' }>;

/** What was left out, for the `worker.output_truncated` event. */
export interface DroppedOutput {
  /** Output events (each plain line counts as one) not stored. */
  events: number;
  /** Characters of their text. */
  chars: number;
}

export class OutputBudget {
  #stored = 0;
  #lifecyclePast = 0;
  #summed: Usage | null = null;
  /**
   * The plain-line message still open for merging (the last of a pending batch, not yet handed over) and
   * its lines: joined once by `seal`, not appended one by one (a rope of 2,000 `y`s costs 30 times its text).
   */
  #open: Extract<NormalizedEvent, { type: 'worker.message' }> | null = null;
  #openLines: string[] = [];
  #openChars = 0;
  readonly dropped: DroppedOutput = { events: 0, chars: 0 };

  /** `maxEvents`: output events (messages, tool calls) stored per attempt, all turns. */
  constructor(readonly maxEvents: number) {}

  /**
   * Move one line's events into `pending`: a plain line (`fromPlainLine`) merges into the plain-line
   * message just before it while the text stays under MERGED_TEXT_CHARS; past the cap output events are
   * counted and dropped.
   */
  take(events: NormalizedEvent[], pending: NormalizedEvent[], fromPlainLine: boolean): void {
    for (const e of events) {
      if (e.type === 'worker.message' && fromPlainLine) {
        if (this.#open && pending[pending.length - 1] === this.#open && this.#openChars + 1 + e.text.length <= MERGED_TEXT_CHARS) {
          this.#openLines.push(e.text);
          this.#openChars += 1 + e.text.length;
          continue;
        }
        this.seal();
        if (!this.#admit(e)) continue;
        this.#open = { ...e };
        this.#openLines = [e.text];
        this.#openChars = e.text.length;
        pending.push(this.#open);
        continue;
      }
      this.seal();
      if (this.#admit(e)) pending.push(e);
    }
  }

  /** Close the open merged message (its text complete): before a batch is handed over. */
  seal(): void {
    if (!this.#open) return;
    if (this.#openLines.length > 1) this.#open.text = this.#openLines.join('\n');
    this.#open = null;
    this.#openLines = [];
    this.#openChars = 0;
  }

  /** The usage summed past the cap, once: written with the turn's last events. */
  takeSummedUsage(): NormalizedEvent[] {
    const u = this.#summed;
    this.#summed = null;
    return u ? [u] : [];
  }

  #admit(e: NormalizedEvent): boolean {
    if (this.#stored < this.maxEvents) {
      if (e.type === 'worker.message' || e.type === 'worker.tool') this.#stored++;
      return true;
    }
    switch (e.type) {
      case 'worker.usage':
        this.#sum(e);
        return false;
      case 'worker.started':
      case 'worker.completed':
      case 'worker.failed':
      case 'worker.warning':
        if (this.#lifecyclePast >= LIFECYCLE_PAST_CAP) break;
        this.#lifecyclePast++;
        return true;
      default:
        break;
    }
    this.dropped.events++;
    this.dropped.chars += charsOf(e);
    return false;
  }

  #sum(e: Usage): void {
    const s = this.#summed;
    this.#summed = s
      ? {
          ...s,
          inputTokens: s.inputTokens + e.inputTokens,
          cachedTokens: s.cachedTokens + e.cachedTokens,
          outputTokens: s.outputTokens + e.outputTokens,
          costUsd: typeof e.costUsd === 'number' || typeof s.costUsd === 'number' ? (s.costUsd ?? 0) + (e.costUsd ?? 0) : s.costUsd,
          model: e.model ?? s.model,
          thread: e.thread ?? s.thread,
        }
      : { ...e };
  }
}

function charsOf(e: NormalizedEvent): number {
  switch (e.type) {
    case 'worker.message':
      return e.text.length;
    case 'worker.tool':
      return (e.output?.length ?? 0) + (e.input === undefined ? 0 : JSON.stringify(e.input).length);
    case 'worker.completed':
      return e.text?.length ?? 0;
    case 'worker.failed':
    case 'worker.warning':
      return e.message.length;
    default:
      return 0;
  }
}
