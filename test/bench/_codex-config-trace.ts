// Development aid (not a bench module: run.ts skips `_` files): does the real Codex CLI ever write its
// CODEX_HOME/config.toml? Four `codex exec` turns (workspace-write, a resumed one, danger-full-access,
// read-only) against the scripted gateway, each with config.toml a hard link to one shared file, under
// `strace -f` (traces in /var/tmp/perf4-ct/*.strace). Prints the shared file's inode, link count, mtime
// and hash after each turn. HOSTILE=1 makes the model's shell command append to config.toml.
// `node bin/run-ts.js test/bench/_codex-config-trace.ts`
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { startGateway } from '../fixtures/gateway/index.js';
const W = process.env.TRACE_DIR ?? '/var/tmp/perf4-ct';
rmSync(W, { recursive: true, force: true });
for (const d of ['home', 'shell', 'ws', 'share']) mkdirSync(`${W}/${d}`, { recursive: true, mode: 0o700 });
spawnSync('git', ['init', '-q', `${W}/ws`]);
const gw = await startGateway({});
gw.addScript('t', (ctx) => (JSON.stringify(ctx.body.input).includes('Touching.') && ctx.turnIndex % 2 === 1 ? { text: 'Done.' } : { text: 'Touching.', tools: [{ shell: process.env.HOSTILE ? `printf '# injected by a worker\\n' >> ${W}/home/config.toml; touch f${ctx.turnIndex}.txt` : `touch f${ctx.turnIndex}.txt` }, { write: { path: `p${ctx.turnIndex}.txt`, content: 'x\n' } }] }));
const shared = `${W}/share/codex-config-x.toml`;
const text = '# Written by LightWorker for one turn; replaced by the next.\ndeveloper_instructions = "Be brief."\n';
writeFileSync(shared, text, { mode: 0o600 });
const sha = () => createHash('sha256').update(readFileSync(shared)).digest('hex').slice(0, 16);
const st = () => { const s = statSync(shared); return `ino ${s.ino} nlink ${s.nlink} mtime ${s.mtimeMs} size ${s.size} sha ${sha()}`; };
console.log('shared before:', st());
const codex = new URL('../../node_modules/.bin/codex', import.meta.url).pathname;
const base = ['exec', '--json', '--skip-git-repo-check', '--color', 'never', '--disable', 'plugins', '--disable', 'shell_snapshot', '--disable', 'unbounded_connection_retries', '-c', 'analytics.enabled=false', '-c', 'skills.bundled.enabled=false', '-c', 'skills.include_instructions=false', '-c', 'model_provider=fakegw', '-c', `model_providers.fakegw={name="fakegw",base_url="${gw.url}/v1",wire_api="responses",env_key="FAKEGW_API_KEY",request_max_retries=2,stream_max_retries=2}`, '-c', 'allow_login_shell=false', '-m', 'gpt-5.5'];
const env = { PATH: process.env.PATH!, HOME: `${W}/shell`, CODEX_HOME: `${W}/home`, FAKEGW_API_KEY: 'dummy' };
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, input: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const c = spawn(cmd, args, { env });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    c.stdin.end(input);
    c.on('close', (status) => res({ status, stdout, stderr }));
  });
}
async function turn(name: string, extra: string[], sandbox: string) {
  rmSync(`${W}/home/config.toml`, { force: true });
  if (!extra.includes('resume')) linkSync(shared, `${W}/home/config.toml`);
  const r = await run('strace', ['-f', '-qq', '-o', `${W}/${name}.strace`, '-e', 'trace=open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,link,linkat,truncate,ftruncate,chmod,fchmodat', codex, ...base, '--sandbox', sandbox, '-C', `${W}/ws`, '-o', `${W}/last.txt`, ...extra, '-'], env, 'Make files. [[script:t]]');
  const thread = /"thread_id":"([^"]+)"/.exec(r.stdout)?.[1];
  console.log(`${name}: exit ${r.status}, thread ${thread}, items ${(r.stdout.match(/item.completed/g) ?? []).length}; shared after: ${st()}`);
  if (r.status !== 0) console.log(r.stderr.slice(-800));
  return thread!;
}
const t1 = await turn('exec-ws', [], 'workspace-write');
await turn('resume', ['resume', t1], 'workspace-write');
const t3 = await turn('exec-full', [], 'danger-full-access');
await turn('exec-ro', [], 'read-only');
gw.close();
console.log('THREADS', t1, t3);
