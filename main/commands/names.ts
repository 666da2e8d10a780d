/**
 * Every command name in the table, as a plain literal: the preload script imports this (and nothing else
 * from main/) to expose one method per command. test/unit/command-names.test.ts keeps it equal to
 * `COMMANDS.keys()`; regenerate with `node bin/run-ts.js scripts/command-names.ts --write`.
 */
export const COMMAND_NAMES = [
  'delegate_task',
  'delegate_batch',
  'get_task',
  'list_tasks',
  'list_workspaces',
  'get_task_tree',
  'approve_task',
  'cancel_task',
  'retry_task',
  'wait_tasks',
  'scheduler_status',
  'get_events',
  'audit_verify',
  'run_doctor',
  'get_settings',
  'update_settings',
  'orchestrate_goal',
  'delegate_reviewed',
  'compare_workers',
  'compare_report',
  'accept_task',
  'get_task_diff',
  'prune_workspaces',
  'open_in_editor',
  'mcp_config',
  'list_workers',
  'link_worker',
  'unlink_worker',
  'add_gateway',
  'get_cache_metrics',
  'add_context_pack',
  'list_context_packs',
  'get_context_pack',
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];
