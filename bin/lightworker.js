#!/usr/bin/env node
// The `lightworker` command: runs the built bundle (out/main/cli.js). In a source checkout a stale bundle
// (sources changed since it was built) is rebuilt first, never run; an installed package ships no sources
// and runs its bundle as is.
import { existsSync, readFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // Answered without loading the engine: scripts and MCP clients probe this often.
  process.stdout.write(`${JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version}\n`);
} else {
  if (existsSync(new URL('main/', root)) && !process.env.LIGHTWORKER_NO_BUILD_CHECK) {
    const { ensureBuild } = await import('../scripts/build-state.js');
    try {
      await ensureBuild();
    } catch (err) {
      process.stderr.write(`lightworker: cannot build the bundle: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  }
  await import('../out/main/cli.js');
}
