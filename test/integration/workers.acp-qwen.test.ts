import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { describeAcpCli } from '../helpers/acp-cli-suite.js';
import { describeAcpEngine } from '../helpers/acp-engine-suite.js';

// Qwen Code (@qwen-code/qwen-code, pinned in devDependencies) over ACP, through the scripted Chat Completions gateway.
// A 429 is retried 7 times with backoff (1.5 s doubling to 30 s, not configurable) before Qwen reports it: ~80 s.
const def = ACP_AGENTS.find((a) => a.name === 'qwen')!;
await describeAcpCli({ worker: 'qwen', bin: 'qwen', adapter: acpAdapter({ name: 'qwen', def }), model: 'fake-model', rateLimitMs: 240_000 });
describeAcpEngine({ worker: 'qwen', bin: 'qwen', model: 'fake-model' });
