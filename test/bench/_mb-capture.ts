// Development aid (not a bench module: run.ts skips `_` files): CPU per custody capture of a git dir's guarded
// files, read whole versus taken over from an earlier capture by stat signature (files need a ctime over 3 s
// old to be signed). `node bin/run-ts.js test/bench/_mb-capture.ts <git dir>`
import { captureGitFiles } from '../../main/isolation/custody-capture.js';
const git = process.argv[2];
const N = 2000;
const before = captureGitFiles(git, git);
console.log('files', before.files.size, 'signed', before.signatures.size);
for (let round = 0; round < 3; round++) {
  let c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) captureGitFiles(git, git);
  let c = process.cpuUsage(c0);
  const cold = (c.user + c.system) / N;
  c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) captureGitFiles(git, git, before);
  c = process.cpuUsage(c0);
  console.log(`µs CPU per capture: without known ${cold.toFixed(1)}, with known ${((c.user + c.system) / N).toFixed(1)}`);
}
