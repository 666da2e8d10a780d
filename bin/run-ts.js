#!/usr/bin/env node
// Run a TypeScript file of this checkout with tsx (benchmarks, scripts): `node bin/run-ts.js FILE [args]`.
import { register } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

register();
const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bin/run-ts.js FILE.ts [args]\n');
  process.exit(2);
}
process.argv.splice(1, 1);
await import(pathToFileURL(resolve(file)).href);
