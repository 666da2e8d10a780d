import { opencodeAdapter } from '../../main/workers/opencode.js';
import { describeRealCli } from '../helpers/worker-cli-suite.js';

// OpenCode (opencode-ai, pinned in devDependencies) through the scripted Chat-Completions gateway.
await describeRealCli({ worker: 'opencode', bin: 'opencode', adapter: opencodeAdapter, model: 'fake-model' });
