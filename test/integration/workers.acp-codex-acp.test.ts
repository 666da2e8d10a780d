import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// codex-acp (@zed-industries/codex-acp, pinned in devDependencies) over ACP, through the scripted gateway.
// It reports only its context window's fill (usage_update used/size), no token counts: noUsage.
const def = ACP_AGENTS.find((a) => a.name === 'codex-acp')!;
await describeAcpCli({ worker: 'codex-acp', bin: 'codex-acp', adapter: acpAdapter({ name: 'codex-acp', def }), model: 'gpt-5.5', noUsage: true });
describeAcpEngine({ worker: 'codex-acp', bin: 'codex-acp', model: 'gpt-5.5' });
