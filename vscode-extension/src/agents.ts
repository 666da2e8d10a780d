import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { BridgeApi } from './api.js';

/** The agents a delegated turn can run: their CLI, driven non-interactively with JSON output. */
export type AgentName = 'claude-code' | 'codex';

interface KnownAgent {
  /** Marketplace id, lower-case (`publisher.name`). */
  id: string;
  label: string;
  /** Set for the agents the bridge can run; others are reported, not run. */
  agent: AgentName | null;
}

/** Agent extensions the bridge recognises. Only the first two are bridge targets so far. */
export const KNOWN_AGENT_EXTENSIONS: readonly KnownAgent[] = [
  { id: 'anthropic.claude-code', label: 'Claude Code', agent: 'claude-code' },
  { id: 'openai.chatgpt', label: 'Codex (OpenAI)', agent: 'codex' },
  { id: 'github.copilot-chat', label: 'GitHub Copilot Chat', agent: null },
  { id: 'saoudrizwan.claude-dev', label: 'Cline', agent: null },
  { id: 'rooveterinaryinc.roo-cline', label: 'Roo Code', agent: null },
  { id: 'continue.continue', label: 'Continue', agent: null },
  { id: 'google.geminicodeassist', label: 'Gemini Code Assist', agent: null },
  { id: 'sst-dev.opencode', label: 'OpenCode', agent: null },
];

export interface AgentCli {
  command: string;
  /** Arguments before the agent's own (a `.js` CLI runs under the editor's Node). */
  prefix: string[];
  source: 'extension' | 'path';
}

export interface AgentReport {
  id: string;
  label: string;
  version: string | null;
  active: boolean;
  agent: AgentName | null;
  runnable: boolean;
  cli: string | null;
  reason: string | null;
}

const exe = (name: string) => (process.platform === 'win32' ? `${name}.exe` : name);

function isExecutable(path: string): boolean {
  try {
    accessSync(path, process.platform === 'win32' ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where each extension keeps its CLI (layouts seen in released versions; unverified ones are only
 * tried, never required): Claude Code `resources/native-binary/claude`, older `resources/claude-code/cli.js`;
 * Codex `bin/<platform-arch>/codex`.
 */
function cliInExtension(agent: AgentName, root: string): AgentCli | null {
  if (agent === 'claude-code') {
    for (const rel of [['resources', 'native-binary', exe('claude')], ['bin', exe('claude')]]) {
      const p = join(root, ...rel);
      if (isExecutable(p)) return { command: p, prefix: [], source: 'extension' };
    }
    const js = join(root, 'resources', 'claude-code', 'cli.js');
    if (existsSync(js)) return { command: process.execPath, prefix: [js], source: 'extension' };
    return null;
  }
  const bin = join(root, 'bin');
  let dirs: string[] = [];
  try {
    dirs = readdirSync(bin);
  } catch {
    return null;
  }
  const arch = process.arch === 'arm64' ? 'aarch64' : 'x86_64';
  const plat = process.platform === 'darwin' ? 'macos' : process.platform === 'win32' ? 'windows' : 'linux';
  // The folder for this platform first, then any other that holds an executable codex.
  dirs.sort((a, b) => Number(b.includes(plat) && b.includes(arch)) - Number(a.includes(plat) && a.includes(arch)));
  for (const d of dirs) {
    const p = join(bin, d, exe('codex'));
    if (isExecutable(p)) return { command: p, prefix: [], source: 'extension' };
  }
  return null;
}

function cliOnPath(agent: AgentName, path = process.env.PATH ?? ''): AgentCli | null {
  const name = exe(agent === 'claude-code' ? 'claude' : 'codex');
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const p = join(dir, name);
    if (isExecutable(p)) return { command: p, prefix: [], source: 'path' };
  }
  return null;
}

/** The agent extensions installed in this editor, with whether (and with which CLI) a turn can run. */
export function listAgents(api: BridgeApi): AgentReport[] {
  const out: AgentReport[] = [];
  for (const ext of api.extensions.all) {
    const known = KNOWN_AGENT_EXTENSIONS.find((k) => k.id === ext.id.toLowerCase());
    if (!known) continue;
    const pkg = (ext.packageJSON ?? {}) as { version?: unknown };
    const cli = known.agent ? (cliInExtension(known.agent, ext.extensionPath) ?? cliOnPath(known.agent)) : null;
    const reason = !known.agent ? 'not a bridge target yet (only Claude Code and Codex turns run)' : cli ? null : `no ${known.agent} CLI found in ${ext.extensionPath} or on PATH`;
    out.push({
      id: known.id, label: known.label, version: typeof pkg.version === 'string' ? pkg.version : null, active: ext.isActive,
      agent: known.agent, runnable: Boolean(cli), cli: cli ? [cli.command, ...cli.prefix].join(' ') : null, reason,
    });
  }
  return out;
}

/** The CLI for `agent` (its extension's, else PATH), or null when its extension is not installed. */
export function locateAgentCli(api: BridgeApi, agent: AgentName): AgentCli | null {
  const known = KNOWN_AGENT_EXTENSIONS.find((k) => k.agent === agent)!;
  const ext = api.extensions.all.find((e) => e.id.toLowerCase() === known.id);
  if (!ext) return null;
  return cliInExtension(agent, ext.extensionPath) ?? cliOnPath(agent);
}
