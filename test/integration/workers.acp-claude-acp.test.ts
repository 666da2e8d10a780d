import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// claude-acp (claude-agent-acp, pinned in devDependencies) over ACP, through the scripted gateway.
const def = ACP_AGENTS.find((a) => a.name === 'claude-acp')!;
await describeAcpCli({ worker: 'claude-acp', bin: 'claude-agent-acp', adapter: acpAdapter({ name: 'claude-acp', def }), model: 'claude-sonnet-4-5', leavesLoopback: 'claude-agent-acp 0.23.1 makes one DNS lookup (10.255.255.53:53) that DISABLE_TELEMETRY and DISABLE_ERROR_REPORTING do not stop' });
describeAcpEngine({ worker: 'claude-acp', bin: 'claude-agent-acp', model: 'claude-sonnet-4-5' });
