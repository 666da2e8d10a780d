import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// Gemini CLI (@google/gemini-cli, pinned in devDependencies) over ACP, through the scripted Gemini API gateway.
const def = ACP_AGENTS.find((a) => a.name === 'gemini')!;
await describeAcpCli({ worker: 'gemini', bin: 'gemini', adapter: acpAdapter({ name: 'gemini', def }), model: 'gemini-2.5-pro' });
describeAcpEngine({ worker: 'gemini', bin: 'gemini', model: 'gemini-2.5-pro' });
