import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// opencode-acp (opencode, pinned in devDependencies) over ACP, through the scripted gateway.
const def = ACP_AGENTS.find((a) => a.name === 'opencode-acp')!;
await describeAcpCli({ worker: 'opencode-acp', bin: 'opencode', adapter: acpAdapter({ name: 'opencode-acp', def }), model: 'fake-model' });
describeAcpEngine({ worker: 'opencode-acp', bin: 'opencode', model: 'fake-model' });
