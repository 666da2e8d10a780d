import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// qwen (qwen, pinned in devDependencies) over ACP, through the scripted gateway.
const def = ACP_AGENTS.find((a) => a.name === 'qwen')!;
await describeAcpCli({ worker: 'qwen', bin: 'qwen', adapter: acpAdapter({ name: 'qwen', def }), model: 'fake-model' });
describeAcpEngine({ worker: 'qwen', bin: 'qwen', model: 'fake-model' });
