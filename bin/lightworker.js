#!/usr/bin/env node
// Source-checkout entry: runs the TypeScript CLI through tsx. The packaged app ships a built bundle instead.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../main/cli/index.ts');
await main(process.argv);
