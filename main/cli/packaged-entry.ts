// The packaged app's CLI and MCP entry: `ELECTRON_RUN_AS_NODE=1 <LightWorker executable>
// <resources>/app.asar/out/main/cli.js mcp` runs the plain-Node CLI inside the app's own runtime, so the
// MCP server works from an installed app with no separate Node. Imports nothing from electron.
import { main } from './index.js';

await main(process.argv);
