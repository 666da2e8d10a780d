import { matchAny } from '../platform/git/globs.js';
import { reportDriverFailure, runAcpDriver } from '../workers/acp/driver.js';

// The ACP worker's driver process (out/main/acp-driver.js): the runner spawns it per turn (workers/acp/adapter.ts).
void runAcpDriver(matchAny).catch(reportDriverFailure);
