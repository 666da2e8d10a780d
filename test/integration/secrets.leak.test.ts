import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { connectHome, storedCells } from '../helpers/store-dump.js';
import { StdioChild } from './mcp.helpers.js';

/**
 * A planted corpus of secrets goes through every input (objective, verify commands, metadata) and
 * through worker output (messages, tool events, a written file, the final result, a failure message).
 * Afterwards no planted secret may appear in any TEXT column of any table, in any file under the home's
 * artifacts/ and logs/, nor in what `show --json`, `events --json` and MCP `get_task` return — while
 * the worker and the verify commands still got the real values.
 */

// A gateway key with no recognisable shape: only value-based redaction can catch it.
const GATEWAY_KEY = 'zz9plural-z-alpha-7QKD';
// The value of a secret-named variable of LightWorker's environment, also shapeless.
const ENV_PASSWORD = 'plover-Quartz-1187x';
// An AWS secret access key without its `aws_secret_access_key=` label.
const AWS_SECRET = 'Tq7/xK2pLm9vR4sWz8Yb3Nc6Hd1Jf5Gk0Ae/Ux7Q';
const JWT_HEADER = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9';
const JWT_PAYLOAD = 'eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0';
const JWT_SIG = 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const JWT = `${JWT_HEADER}.${JWT_PAYLOAD}.${JWT_SIG}`;
const OPENAI = 'sk-proj-Abc123Def456Ghi789Jkl012Mno345';
const BEARER = 'bRr9Tok3nValue-77aa11bb';
const PEM_BODY = 'MIIEowIBAAKCAQEAx1planted2PEMbody3zzzzQQ';
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----`;

// An Azure storage connection string and a SAS URL.
const AZURE_KEY = 'Kq3vT9xLm2Pw8Rz5Yb1Nc7Hd4Jf6Gk0AeUx7QsWt2Vy9Bn3Mc5Xz8Lk1Jh4Gf6Ds0Ap2Qw5Er7Ty9Ui3Op6As8Df==';
const AZURE = `DefaultEndpointsProtocol=https;AccountName=plantedacct;AccountKey=${AZURE_KEY};EndpointSuffix=core.windows.net`;
const SAS_SIG = 'Xk2pLm9vR4sWz8Yb3Nc6Hd1Jf5Gk0AeUx7Q%3D';
const SAS = `https://plantedacct.blob.core.windows.net/c/db.tar?sv=2022-11-02&sp=r&sig=${SAS_SIG}`;
// A private key in base64 (`base64 key.pem`), wrapped at 76 columns.
const B64_PEM_LINES = Buffer.from(`-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC${PEM_BODY}Zq\n-----END PRIVATE KEY-----\n`).toString('base64').match(/.{1,76}/g)!;
// A token wrapped by a terminal: the second line alone has no shape.
const WRAPPED_HEAD = 'sk-proj-Wr4pp3dT0k3nHe4dPart';
const WRAPPED_TAIL = 'S3c0ndL1neOfTheT0ken9x';
// A token in a file name the worker writes.
const GHP = 'ghp_Fn4meT0k3nAb1Cd2Ef3Gh4Ij5Kl6Mn7Op';

const ONE_LINE = `gw ${GATEWAY_KEY} env ${ENV_PASSWORD} aws ${AWS_SECRET} jwt ${JWT} openai ${OPENAI} Authorization: Bearer ${BEARER} azure ${AZURE} sas ${SAS}`;
const CORPUS = `${ONE_LINE}\n${PEM}\nk8s secret:\n${B64_PEM_LINES.join('\n')}\nkey: ${WRAPPED_HEAD}\n${WRAPPED_TAIL}\n`;
const NEEDLES = [GATEWAY_KEY, ENV_PASSWORD, AWS_SECRET, JWT_HEADER, JWT_PAYLOAD, JWT_SIG, OPENAI, BEARER, PEM_BODY, AZURE_KEY.slice(0, 24), SAS_SIG.slice(0, 16), ...B64_PEM_LINES.slice(1).filter((l) => l.length >= 16), WRAPPED_TAIL, GHP.slice(4)];

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Every planted needle found in `text`, named by where it was seen. */
function leaks(where: string, text: string): string[] {
  return NEEDLES.filter((n) => text.includes(n)).map((n) => `${where}: ${n}`);
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

describe('no planted secret is persisted or shown', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  const env = { LW_PLANTED_GATEWAY_KEY: GATEWAY_KEY, MY_SERVICE_PASSWORD: ENV_PASSWORD };
  const ids: Record<'exec' | 'fail' | 'blocked' | 'named', string> = { exec: '', fail: '', blocked: '', named: '' };

  beforeAll(async () => {
    ({ dir, cleanup } = tempDir('lw-secrets-'));
    home = join(dir, 'home');
    withTestStore(home);
    repo = makeRepo(join(dir, 'repo'));
    expect((await runCli(['init'], { home })).code).toBe(0);
    writeFileSync(
      join(home, 'config.toml'),
      readFileSync(join(home, 'config.toml'), 'utf8') + `\n[gateways.planted]\nbase_url = "http://127.0.0.1:9"\nkey_env = "LW_PLANTED_GATEWAY_KEY"\n`,
    );
    const submit = async (args: string[]) => {
      const r = await runCli(['submit', '--workspace', repo, '--worker', 'mock', '--json', ...args], { home, env });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).task.id as string;
    };

    // 1. An execute task: the corpus in its objective (from a file), verify commands and worker output.
    const objectiveFile = join(dir, 'objective.txt');
    writeFileSync(objectiveFile, `Use these credentials:\n${CORPUS}`);
    const exec = {
      mock: {
        message: CORPUS,
        events: [{ type: 'tool', name: 'bash', status: 'completed', input: { cmd: `curl -H "Authorization: Bearer ${BEARER}" ${GATEWAY_KEY}` }, output: CORPUS }],
        write_files: { 'leak.txt': CORPUS, [`notes_${GHP}.txt`]: 'x\n', [`cfg-${GATEWAY_KEY}.json`]: '{}\n' },
        result: { summary: CORPUS, files_changed: ['leak.txt', `notes_${GHP}.txt`], notes: `${GATEWAY_KEY} ${AWS_SECRET}` },
      },
    };
    // The verify command passes only if it received the real values (their hashes), then prints them.
    const verify = `printf %s '${GATEWAY_KEY}' | sha256sum | grep -q ${sha(GATEWAY_KEY)} && printf %s '${AWS_SECRET}' | sha256sum | grep -q ${sha(AWS_SECRET)} && echo '${ONE_LINE}'`;
    ids.exec = await submit(['--kind', 'execute', '--mode', 'auto_execute', '--objective-file', objectiveFile, '--verify', verify, '--metadata', JSON.stringify(exec)]);

    // 2. A failing task: the corpus comes back as the worker's error.
    ids.fail = await submit(['--kind', 'explore', '--metadata', JSON.stringify({ mock: { fail_message: CORPUS } }), 'look at', ONE_LINE]);
    // Its dependent is blocked with the failure's reason as its error.
    ids.blocked = await submit(['--kind', 'explore', '--depends-on', ids.fail, 'after the failing one']);

    // 3. An auto-named task whose first line is cut right inside a JWT; its plain-text answer holds the corpus.
    const prefix = 'Investigate why the login flow rejects this token: ';
    ids.named = await submit(['--kind', 'explore', '--metadata', JSON.stringify({ mock: { text: CORPUS } }), `${prefix}${JWT}`]);

    const run = await runCli(['run', '--until-idle'], { home, env, timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
  }, 180_000);

  afterAll(() => cleanup?.());

  it('ran the tasks: the worker and the verify command got the real values', async () => {
    const show = async (id: string) => JSON.parse((await runCli(['show', id, '--json'], { home })).stdout).task;
    const exec = await show(ids.exec);
    expect(exec.status).toBe('completed');
    expect(readFileSync(join(exec.worktreePath, 'leak.txt'), 'utf8')).toBe(CORPUS);
    expect((await show(ids.fail)).status).toBe('failed');
    const blocked = await show(ids.blocked);
    expect(blocked.status).toBe('blocked');
    expect(blocked.error.message).toContain('[REDACTED]');
    const named = await show(ids.named);
    expect(named.status).toBe('completed');
    expect(named.name).toBe('Investigate why the login flow rejects this token: [REDACTED]');
  });

  it('no TEXT column of any table holds a planted secret', () => {
    const db = connectHome(home);
    try {
      const cells = storedCells(db);
      expect([...new Set(cells.map((c) => c.where.split('.')[0]))]).toEqual(expect.arrayContaining(['tasks', 'events', 'attempts']));
      // Not vacuous: the corpus reached the database, redacted.
      const redactedCells = db.prepare(`SELECT COUNT(*) AS n FROM events WHERE payload LIKE '%[REDACTED]%'`).get() as { n: number };
      expect(redactedCells.n).toBeGreaterThan(3);
      expect(cells.length).toBeGreaterThan(50);
      expect(cells.flatMap((c) => leaks(c.where, c.text))).toEqual([]);
    } finally {
      db.close();
    }
  });

  it('no file under artifacts/ or logs/ holds a planted secret', () => {
    const files = [...walk(join(home, 'artifacts')), ...walk(join(home, 'logs'))];
    const names = files.map((f) => f.slice(home.length));
    expect(names.some((n) => n.endsWith('stdout.jsonl'))).toBe(true);
    expect(names.some((n) => n.endsWith('.patch'))).toBe(true);
    expect(names.some((n) => /verify-.*\.log$/.test(n))).toBe(true);
    const found = files.flatMap((f) => leaks(f.slice(home.length), readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
    const stdout = readFileSync(files.find((f) => f.endsWith('stdout.jsonl') && f.includes(ids.exec))!, 'utf8');
    expect(stdout).toContain('[REDACTED]');
  });

  it('show --json, events --json and tasks --json show none', async () => {
    const found: string[] = [];
    for (const id of Object.values(ids)) {
      const r = await runCli(['show', id, '--json'], { home });
      expect(r.code).toBe(0);
      found.push(...leaks(`show ${id}`, r.stdout));
    }
    const events = await runCli(['events', '--json'], { home });
    expect(events.code).toBe(0);
    found.push(...leaks('events', events.stdout));
    const tasks = await runCli(['tasks', '--json'], { home });
    found.push(...leaks('tasks', tasks.stdout));
    // The diff: its headers, its text and its list of files (a token in a file name).
    const diff = await runCli(['diff', ids.exec, '--json'], { home, env });
    expect(diff.code, diff.stderr).toBe(0);
    expect(JSON.parse(diff.stdout).files).toHaveLength(3);
    found.push(...leaks('diff', diff.stdout));
    // An error answer that quotes the caller's input.
    const bad = await runCli(['submit', '--workspace', `/nonexistent/${GATEWAY_KEY} ${AWS_SECRET}`, 'x'], { home, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('/nonexistent/[REDACTED] [REDACTED] is not an existing directory');
    found.push(...leaks('submit error', bad.stderr));
    expect(found).toEqual([]);
  });

  it('MCP get_task and get_events show none', async () => {
    const child = new StdioChild(home, env);
    try {
      await child.initialize();
      const found: string[] = [];
      for (const id of Object.values(ids)) {
        const r = await child.callTool('get_task', { id });
        expect(r.result?.isError, JSON.stringify(r)).toBeFalsy();
        found.push(...leaks(`get_task ${id}`, JSON.stringify(r)));
      }
      const diff = await child.callTool('get_task_diff', { id: ids.exec });
      expect(diff.result?.isError, JSON.stringify(diff)).toBeFalsy();
      found.push(...leaks('get_task_diff', JSON.stringify(diff)));
      const ev = await child.callTool('get_events', {});
      found.push(...leaks('get_events', JSON.stringify(ev)));
      const bad = await child.callTool('delegate_task', { objective: 'x', workspace: `/nonexistent/${GATEWAY_KEY}` });
      expect(bad.result?.isError).toBe(true);
      found.push(...leaks('delegate_task error', JSON.stringify(bad)));
      expect(found).toEqual([]);
    } finally {
      await child.stop();
    }
  });
});
