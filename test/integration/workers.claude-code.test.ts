import { claudeCodeAdapter } from '../../main/workers/claude-code.js';
import { describeRealCli } from '../helpers/worker-cli-suite.js';

// Claude Code (@anthropic-ai/claude-code, pinned in devDependencies) through the scripted Messages-API gateway.
await describeRealCli({ worker: 'claude-code', bin: 'claude', adapter: claudeCodeAdapter, model: 'claude-sonnet-4-5' });
