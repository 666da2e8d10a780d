import { expect } from 'vitest';
import { codexAdapter } from '../../main/workers/codex.js';
import { describeRealCli } from '../helpers/worker-cli-suite.js';

// Codex CLI (@openai/codex, pinned in devDependencies) through the scripted Responses-API gateway.
await describeRealCli({
  worker: 'codex',
  bin: 'codex',
  adapter: codexAdapter,
  model: 'gpt-5.5',
  schemaRequestCheck(req) {
    const body = req.body as { text?: { format?: { type?: string; schema?: { required?: string[] } } } };
    expect(body.text?.format?.type).toBe('json_schema');
    expect(body.text?.format?.schema?.required).toEqual(['summary', 'files_changed', 'notes', 'escalation']);
  },
});
