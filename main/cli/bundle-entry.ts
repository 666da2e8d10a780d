// The entry of out/main/cli.cjs, the CLI as one CommonJS file (see electron.vite.config.ts) that
// bin/lightworker.js runs with V8's code cache. The same program as main/cli/packaged-entry.ts, without its
// top-level await, which CommonJS cannot have: main() reports its own errors and sets the exit code.
import { main } from './index.js';

void main(process.argv);
