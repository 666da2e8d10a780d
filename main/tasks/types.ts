// The task model lives in core/model.ts, below the store (which reads and writes tasks); the task rules
// and everything above them import it from here as before.
export * from '../core/model.js';
