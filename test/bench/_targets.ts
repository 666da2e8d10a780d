// The performance targets ("Fast and frugal") that `npm run bench` reports side by side: the Python
// LightWorker's figure, the target, and which measured figure answers the row.
//
// Source of the Python figures: the targets' table — the Python LightWorker measured on the same machine as
// LightWorker with the same instant fake worker (`instant-codex.sh` as `codex`), interleaved runs, medians.
// They are constants here (the Python implementation is not part of this repository).

export interface TargetRow {
  figure: string;
  /** Module name and figure key in its results. */
  from: [string, string];
  /** A second figure shown beside the first (e.g. the 10k-task RSS beside the 200-task one). */
  also?: [string, string];
  /** The second figure is held to the target too (both RSS figures), not only shown. */
  alsoTargeted?: boolean;
  python: string;
  target: number;
  unit: string;
  /** false: higher is better. */
  lowerIsBetter?: boolean;
}

export const ISSUE_13_TARGETS: TargetRow[] = [
  { figure: 'drain 200 trivial explore tasks, concurrency 4', from: ['scheduler', 'drain 200 explore tasks @4, leader start to exit, s'], also: ['scheduler', 'drain 200: first claim to last completion, s'], python: '13.0 s', target: 1.3, unit: 's' },
  { figure: 'leader CPU per task (workers excluded)', from: ['scheduler', 'leader CPU per task (workers excluded), ms'], python: '5.8 ms', target: 5, unit: 'ms' },
  { figure: 'queued → worker spawned, p50 (idle leader)', from: ['scheduler', 'queued → worker spawned p50 (idle leader, other process submits), ms'], python: '113 ms', target: 10, unit: 'ms' },
  { figure: 'worker exit → wait_tasks returns in another process, p50', from: ['scheduler', 'worker exit → wait_tasks returns in another process p50, ms'], python: '187 ms', target: 15, unit: 'ms' },
  { figure: 'leader peak RSS, 200 tasks / 10k tasks in the database', from: ['scheduler', 'leader peak RSS, 200 tasks, MiB'], also: ['scheduler', 'leader peak RSS, 10000 tasks in the database, MiB'], alsoTargeted: true, python: '30 / 32 MiB', target: 64, unit: 'MiB' },
  { figure: '  the same, private memory (RSS less the shared pages of node)', from: ['scheduler', 'leader peak private (anonymous) memory, 200 tasks, MiB'], also: ['scheduler', 'leader peak private (anonymous) memory, 10000 tasks in the database, MiB'], alsoTargeted: true, python: '—', target: 64, unit: 'MiB' },
  { figure: '10k waiting tasks add to a new task created → running', from: ['scheduler', '10000 waiting tasks add to created → running, %'], python: '—', target: 20, unit: '%' },
  { figure: 'MCP tools/list, all tools', from: ['mcp', 'tools_list_bytes'], python: '7,054 B (14 tools)', target: 7000, unit: 'B' },
  { figure: 'MCP list_tasks, 100 tasks (default call)', from: ['mcp', 'list_tasks_default_bytes'], also: ['mcp', 'list_tasks_default_wire_bytes'], python: '—', target: 30_000, unit: 'B' },
];
