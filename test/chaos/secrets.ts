// Scenario 5: a seeded corpus of secrets — shaped (sk-…, sk-ant-…, ghp_…, AKIA…, JWT, PEM, Bearer, URL
// credentials, password=…, Azure connection strings and SAS URLs, a base64-encoded PEM key wrapped over
// lines, a token wrapped over two lines) and shapeless (a gateway key known only through [gateways.x] key_env, an
// unlabelled 40-character AWS secret, the value of a secret-named variable) — sent through every input
// (CLI submit fields, context pack, MCP delegate_task, HTTP delegate_task) and printed by the worker
// (stdout, stderr, final answer, failure, and file names: every single-line secret that can be one names a
// file the worker writes). A leak is any corpus value, or a 12-character piece of its
// random part, found in the database's text columns, the files under the home, or what show/events/
// tasks, diff, MCP get_task/get_task_diff and HTTP get_task/get_task_diff return.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServe, obtainAuth } from './http-fuzz.js';
import { chaosObjective, withLab, type Lab } from './lab.js';
import { END_STATES, findNeedles, openDbReadOnly, readTasks, scanDatabase, scanFiles, type Hit } from './observe.js';
import { createRng, sleep, type Rng } from './rng.js';

export interface Secret {
  label: string;
  /** The text as a user or worker would write it. */
  value: string;
  /** The random part: a leak of any 12-character piece of it counts. */
  random: string;
}

export interface SecretFigures {
  secrets: number;
  tasks: number;
  leaks: number;
  byLabel: Record<string, number>;
  contextPackRefused: boolean;
  notes: string[];
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
export const GATEWAY_KEY_ENV = 'CHAOS_GATEWAY_KEY';
export const SECRET_NAMED_ENV = 'CHAOS_DB_PASSWORD';

/** The corpus: fresh random values for a seed. */
export function makeCorpus(rng: Rng): Secret[] {
  const s = (label: string, prefix: string, random: string, suffix = ''): Secret => ({ label, value: prefix + random + suffix, random });
  const jwtHeader = Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url');
  const jwtBody = Buffer.from(JSON.stringify({ sub: rng.chars(16), n: rng.chars(12) })).toString('base64url') + '.' + rng.chars(43, B64URL);
  const pemBody = Array.from({ length: 4 }, () => rng.chars(64, B64)).join('\n');
  return [
    s('openai sk-', 'sk-', rng.chars(48)),
    s('anthropic sk-ant-', 'sk-ant-api03-', rng.chars(80, B64URL)),
    s('github ghp_', 'ghp_', rng.chars(36)),
    s('aws access key id', 'AKIA', rng.chars(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')),
    s('jwt', `${jwtHeader}.`, jwtBody),
    s('pem private key', '-----BEGIN RSA PRIVATE KEY-----\n', pemBody, '\n-----END RSA PRIVATE KEY-----'),
    s('bearer token', 'Authorization: Bearer ', rng.chars(40, B64URL)),
    s('url credentials', 'https://chaos:', rng.chars(20), '@git.example.com/repo.git'),
    s('password=', 'password=', rng.chars(18)),
    s('gateway key (key_env)', '', rng.chars(36, 'abcdefghijklmnopqrstuvwxyz0123456789')),
    s('unlabelled aws secret', '', rng.chars(40, B64)),
    s('secret-named env var', '', rng.chars(28)),
    s('azure connection string', 'DefaultEndpointsProtocol=https;AccountName=chaosacct;AccountKey=', rng.chars(86, B64) + '==', ';EndpointSuffix=core.windows.net'),
    s('azure sas url', 'https://chaosacct.blob.core.windows.net/backups/db.tar?sv=2022-11-02&sp=r&se=2030-01-01&sig=', rng.chars(43) + '%3D'),
    // `base64 key.pem`: the whole PEM once more in base64, wrapped at 76 columns over several lines.
    s('base64 pem key', '', base64Wrapped(`-----BEGIN PRIVATE KEY-----\n${pemBody}\n-----END PRIVATE KEY-----\n`)),
    // A long token wrapped by a terminal: its second line alone has no shape.
    s('token wrapped over 2 lines', 'sk-proj-', `${rng.chars(30)}\n${rng.chars(30)}`),
  ];
}

function base64Wrapped(text: string): string {
  return Buffer.from(text).toString('base64').match(/.{1,76}/g)!.join('\n');
}

/** Needles for a secret: its random part and every 12-character window of it (stride 6). */
function needlesOf(secret: Secret): string[] {
  const r = secret.random.replace(/\n/g, '');
  const out = new Set<string>([secret.random]);
  for (const line of secret.random.split('\n')) for (let i = 0; i + 12 <= line.length; i += 6) out.add(line.slice(i, i + 12));
  if (r.length < 12) out.add(r);
  return [...out];
}

async function submitInputs(lab: Lab, corpus: Secret[], rng: Rng): Promise<{ refused: boolean; notes: string[] }> {
  const notes: string[] = [];
  const by = (label: string) => corpus.find((c) => c.label === label)!.value;
  const all = corpus.map((c) => c.value).join(' ; ');
  const base = ['--worker', 'chaos-agent', '--mode', 'auto_execute', '--timeout', '30', '--workspace', lab.repo];
  const submit = async (args: string[]) => {
    const r = await lab.cli(['submit', ...base, ...args]);
    if (r.code !== 0) notes.push(`submit refused (${args[0]}…): ${r.stderr.trim().slice(0, 160)}`);
  };
  // Every CLI field, with the worker echoing the corpus on success and in its failure.
  // An execute task: the files it writes (named after secrets) show in its diff.
  await submit(['--kind', 'execute', '--name', `deploy with ${by('openai sk-')}`, '--verify', `echo ${by('unlabelled aws secret')}`, '--metadata', JSON.stringify({ token: by('github ghp_'), note: by('password='), env: by('secret-named env var') }), '--criteria', `signed by ${by('jwt')}`, chaosObjective(`use these: ${all}`, { print_secrets: true, secret_files: true, sleep_ms: 100 })]);
  await submit([chaosObjective(`${by('jwt')} is the session; also ${by('gateway key (key_env)')}`, { print_secrets: true, fail: true })]);
  await submit(['--gateway', 'chaos', chaosObjective(`call the gateway with ${by('gateway key (key_env)')}`, { print_secrets: true })]);
  await submit(['--verify', JSON.stringify(['sh', '-c', `echo ${by('url credentials')}; echo ${by('anthropic sk-ant-')} >&2`]), chaosObjective(`clone ${by('url credentials')}`, { sleep_ms: rng.int(50, 200) })]);
  // A context pack that holds a credential must be refused.
  const packFile = join(lab.root, 'pack.txt');
  writeFileSync(packFile, `Reference notes.\nOur deploy key: ${by('anthropic sk-ant-')}\n${by('pem private key')}\n`);
  const pack = await lab.cli(['context-pack', 'add', 'chaos@1', '--file', packFile]);
  return { refused: pack.code !== 0, notes };
}

/** MCP: delegate_task with secrets, and get_task and get_task_diff for every task; returns the text it printed. */
async function throughMcp(lab: Lab, corpus: Secret[], ids: string[] | null): Promise<string> {
  const child = lab.start(['mcp'], 'pipe');
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'chaos', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    ...(ids === null
      ? [{ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delegate_task', arguments: { objective: chaosObjective(`mcp caller says ${corpus.map((c) => c.value).join(' ')}`, {}), workspace: lab.repo, worker: 'chaos-agent', metadata: { apiKey: corpus[0].value, pw: corpus[8].value } } } }]
      : ids.flatMap((id, i) => ['get_task', 'get_task_diff'].map((name, j) => ({ jsonrpc: '2.0', id: 10 + 2 * i + j, method: 'tools/call', params: { name, arguments: { id } } })))),
  ];
  for (const l of lines) child.stdin!.write(JSON.stringify(l) + '\n');
  const want = ids === null ? 2 : 2 * ids.length + 1;
  const end = Date.now() + 30_000;
  while ((out.match(/"id":\s*\d+/g)?.length ?? 0) < want && Date.now() < end) await sleep(50);
  child.stdin!.end();
  child.kill('SIGTERM');
  const got = out.match(/"id":\s*\d+/g)?.length ?? 0;
  if (got < want) throw new Error(`lightworker mcp answered ${got} of ${want} requests: the leak scan would miss its output`);
  return out;
}

/** Run the secret corpus in its own lab and count leaks. */
export async function runSecrets(o: { seed: number; log: (l: string) => void }): Promise<SecretFigures> {
  const rng = createRng(o.seed ^ 0x5ec7e7);
  const corpus = makeCorpus(rng);
  const byLabel = (l: string) => corpus.find((c) => c.label === l)!.value;
  const secretsFile = join(process.env.TMPDIR ?? '/tmp', `chaos-secrets-${process.pid}-${o.seed}.json`);
  writeFileSync(secretsFile, JSON.stringify(corpus.map((c) => c.value)), { mode: 0o600 });
  const env = { [GATEWAY_KEY_ENV]: byLabel('gateway key (key_env)'), [SECRET_NAMED_ENV]: byLabel('secret-named env var') };
  const config = `[gateways.chaos]\nbase_url = "http://127.0.0.1:9/"\nkey_env = "${GATEWAY_KEY_ENV}"\n`;
  try {
    return await withLab('secrets', { env, config, secretsFile }, async (lab) => {
      const { refused, notes } = await submitInputs(lab, corpus, rng);
      const shown: { where: string; text: string }[] = [];
      shown.push({ where: 'mcp delegate_task reply', text: await throughMcp(lab, corpus, null) });
      // HTTP: delegate_task through the console, then (after the run) get_task for every task.
      const serve = await startServe(lab);
      const auth = await obtainAuth(serve.port, serve.printed());
      const post = async (name: string, body: unknown) => {
        const r = await fetch(`http://127.0.0.1:${serve.port}/api/commands/${name}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
        if (!r.ok) throw new Error(`HTTP ${name} answered ${r.status}: the leak scan would miss its output`);
        return r.text();
      };
      // Outputs the scan reads must really be there: a failing command would hide a leak.
      const shownBy = async (args: string[]) => {
        const r = await lab.cli(args);
        if (r.code !== 0) throw new Error(`lightworker ${args.join(' ')} failed: ${r.stderr.trim()}`);
        return r.stdout;
      };
      shown.push({ where: 'http delegate_task reply', text: await post('delegate_task', { objective: chaosObjective(`http caller: ${corpus.map((c) => c.value).join(' ')}`, { print_secrets: true, secret_files: true }), workspace: lab.repo, worker: 'chaos-agent', mode: 'auto_execute', verify: [`test -n "${byLabel('password=')}"`] }) });
      // serve leads the scheduler: wait (bounded) for every task to end.
      const db = openDbReadOnly(lab.home);
      const end = Date.now() + 90_000;
      while (Date.now() < end && !readTasks(db).every((t) => END_STATES.has(t.status))) await sleep(200);
      const tasks = readTasks(db);
      if (!tasks.every((t) => END_STATES.has(t.status))) notes.push(`secret tasks not ended after 90 s: ${tasks.filter((t) => !END_STATES.has(t.status)).length}`);
      const ids = tasks.map((t) => t.id);
      for (const id of ids) {
        shown.push({ where: 'http get_task', text: await post('get_task', { id }) });
        shown.push({ where: 'cli show --json', text: await shownBy(['show', id, '--json']) });
        shown.push({ where: 'http get_task_diff', text: await post('get_task_diff', { id }) });
        shown.push({ where: 'cli diff --json', text: await shownBy(['diff', id, '--json']) });
      }
      serve.child.kill('SIGTERM');
      shown.push({ where: 'cli events --json', text: await shownBy(['events', '--json', '--limit', '5000']) });
      shown.push({ where: 'cli tasks --json', text: await shownBy(['tasks', '--json']) });
      shown.push({ where: 'mcp get_task/get_task_diff', text: await throughMcp(lab, corpus, ids) });
      await sleep(500);
      const hits: (Hit & { label: string })[] = [];
      for (const secret of corpus) {
        const needles = needlesOf(secret);
        const found = [
          ...scanDatabase(db, needles),
          // Not scanned: git's own index of a task worktree, which lists the files the worker wrote by name
          // (`notes_<token>.txt`): the worktree is the work itself, handed over as it is on accept.
          ...scanFiles(lab.home, needles, (rel) => /^lightworker\.db/.test(rel) || rel === 'secret.key' || /^worktrees\/[^/]+\/\.git\/index$/.test(rel)),
          ...shown.flatMap((s) => findNeedles(s.text, needles, s.where)),
        ];
        // One leak per (secret, place), however many pieces of it the place holds.
        for (const where of new Set(found.map((h) => h.where))) hits.push({ label: secret.label, where, needle: secret.random.slice(0, 8) });
      }
      db.close();
      const counts: Record<string, number> = {};
      for (const h of hits) counts[h.label] = (counts[h.label] ?? 0) + 1;
      const places = new Map<string, Set<string>>();
      for (const h of hits) {
        const where = h.where.replace(/artifacts\/[0-9A-Z]{26}\//, 'artifacts/<task>/');
        places.set(where, (places.get(where) ?? new Set()).add(h.label));
      }
      for (const [where, labels] of places) notes.push(`leak in ${where}: ${[...labels].join(', ')}`);
      if (!refused) notes.push('a context pack holding a credential was accepted');
      return { secrets: corpus.length, tasks: tasks.length, leaks: hits.length, byLabel: counts, contextPackRefused: refused, notes };
    });
  } finally {
    rmSync(secretsFile, { force: true });
  }
}
