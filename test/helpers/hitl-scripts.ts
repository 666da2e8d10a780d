import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Turn, TurnContext } from '../fixtures/gateway/index.js';

/** A command Claude Code's acceptEdits mode does not allow on its own: it asks for it. */
export const PERMISSION_COMMAND = `node -e "require('fs').writeFileSync('granted.txt', 'ok')"`;

/**
 * Claude Code asking permission for PERMISSION_COMMAND, chosen from what the session already holds (not
 * the turn count, which an interrupted turn may or may not advance): the command first; after a
 * person's answer, the command again (allow) or a final answer (deny); once it ran, the final answer.
 */
export function permissionScript(ctx: TurnContext): Turn {
  const text = JSON.stringify(ctx.body.messages ?? []);
  const final = (summary: string): Turn => ({ json: { summary, files_changed: existsSync(join(ctx.cwd ?? '/nonexistent', 'granted.txt')) ? ['granted.txt'] : [], notes: null, escalation: null } });
  if (text.includes('A person denied your request')) return final('Continued without the command.');
  const allowed = text.lastIndexOf('A person allowed');
  if (allowed !== -1 && text.slice(allowed).includes('tool_result')) return final('Ran the allowed command.');
  return { text: 'Running a command.', tools: [{ shell: PERMISSION_COMMAND }] };
}

export const QUESTION = 'Should the summary be in English or in French?';

/** Codex asking QUESTION through the escalation protocol; once the session holds the answer, finishing with it. */
export function questionScript(ctx: TurnContext): Turn {
  const text = JSON.stringify(ctx.body.input ?? ctx.body);
  const answered = /A person answered:\\n([^\\"]+)/.exec(text);
  if (answered) return { json: { summary: `Answered in ${answered[1].trim()}.`, findings: [`the person said: ${answered[1].trim()}`], escalation: null } };
  return { json: { summary: 'Need a decision first.', findings: [], escalation: { type: 'question', text: QUESTION, options: ['English', 'French'], command: null, scope: null, reason: 'the objective does not say' } } };
}
