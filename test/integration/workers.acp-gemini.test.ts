import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// Gemini CLI (@google/gemini-cli, pinned in devDependencies) over ACP, through the scripted Gemini API gateway.
// Its session/load is not used (agents.ts noLoad): follow-ups, repairs and answers continue in a fresh session.
const def = ACP_AGENTS.find((a) => a.name === 'gemini')!;
await describeAcpCli({ worker: 'gemini', bin: 'gemini', adapter: acpAdapter({ name: 'gemini', def }), model: 'gemini-2.5-pro', freshFollowUps: true });
describeAcpEngine({ worker: 'gemini', bin: 'gemini', model: 'gemini-2.5-pro', freshFollowUps: true });
