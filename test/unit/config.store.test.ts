import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { redactText } from '../../main/core/redact.js';
import { storeTarget } from '../../main/store/pg/open.js';
import { tempDir } from '../helpers/env.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

const fromToml = (text: string) => parseConfig(parse(text));
const refused = (text: string, key: string) => {
  const err = (() => {
    try {
      fromToml(text);
    } catch (e) {
      return e as { code: string; message: string; details?: { key?: string } };
    }
    throw new Error(`accepted: ${text}`);
  })();
  expect(err.code).toBe('invalid_input');
  expect(err.message).toContain(key);
  return err;
};

describe('[store] and [fleet] in config.toml (credentials never stored)', () => {
  it('refuses a password in store.url, in the user part or as a query parameter, naming store.url', () => {
    const a = refused('[store]\nurl = "postgres://lw:Hunter2Secret@db.internal/lw"\n', 'store.url');
    expect(a.message).toMatch(/must not contain a password/);
    refused('[store]\nurl = "postgresql://lw@db.internal/lw?sslmode=require&password=Hunter2Secret"\n', 'store.url');
    refused('[store]\nurl = "mysql://lw@db.internal/lw"\n', 'store.url');
    expect(fromToml('[store]\nurl = "postgres://lw@db.internal:5432/lw?sslmode=require"\n').store.url).toBe('postgres://lw@db.internal:5432/lw?sslmode=require');
  });

  it('refuses a schema name that is not a plain lower-case identifier, naming store.schema', () => {
    for (const schema of ['Public', 'lw"; DROP SCHEMA x; --', '1abc', 'a-b', '']) refused(`[store]\nschema = ${JSON.stringify(schema)}\n`, 'store.schema');
    expect(fromToml('[store]\nschema = "team_a2"\n').store.schema).toBe('team_a2');
  });

  it('an unreadable store.url_file is an error naming store.url_file; a readable one supplies the whole URL, its password redacted', () => {
    const missing = fromToml(`[store]\nurl_file = ${JSON.stringify(join(t.dir, 'nope'))}\n`);
    expect(() => storeTarget(missing, {})).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(/^store\.url_file: cannot read/) }));
    if (process.getuid?.() !== 0) {
      const locked = join(t.dir, 'locked');
      writeFileSync(locked, 'postgres://lw:x@db/lw\n');
      chmodSync(locked, 0o000);
      expect(() => storeTarget(fromToml(`[store]\nurl_file = ${JSON.stringify(locked)}\n`), {})).toThrow(/store\.url_file/);
    }
    const file = join(t.dir, 'database-url');
    writeFileSync(file, 'postgres://lw:FileSecret99@db.internal:5432/lw\n');
    const target = storeTarget(fromToml(`[store]\nurl_file = ${JSON.stringify(file)}\n`), {})!;
    expect(target.source).toBe('store.url_file');
    expect(target.label).not.toContain('FileSecret99');
    expect(target.label).toContain('postgres://lw@db.internal:5432/lw');
    expect(redactText('connect failed for FileSecret99')).not.toContain('FileSecret99');
  });

  it('LIGHTWORKER_DATABASE_URL wins over the config, and a bad one is refused naming it', () => {
    const config = fromToml('[store]\nurl = "postgres://lw@db.internal/lw"\n');
    expect(storeTarget(config, {})!.source).toBe('store.url');
    const env = storeTarget(config, { LIGHTWORKER_DATABASE_URL: 'postgres://lw:EnvSecret77@other/lw' })!;
    expect(env).toMatchObject({ source: 'LIGHTWORKER_DATABASE_URL' });
    expect(env.label).not.toContain('EnvSecret77');
    expect(() => storeTarget(config, { LIGHTWORKER_DATABASE_URL: 'http://db/lw' })).toThrow(/LIGHTWORKER_DATABASE_URL: expected a postgres:\/\/ URL/);
    expect(storeTarget(fromToml(''), {})).toBeNull();
  });

  it('[fleet] repos: identities without spaces or credentials, each mapped to an absolute path', () => {
    const ok = fromToml('[fleet]\nrepos = { "github.com/acme/api" = "/srv/src/api", "git@github.com:acme/web.git" = "/srv/src/web" }\n');
    expect(ok.fleet.repos).toEqual({ 'github.com/acme/api': '/srv/src/api', 'git@github.com:acme/web.git': '/srv/src/web' });
    refused('[fleet]\nrepos = { "github.com/acme/api" = "src/api" }\n', 'fleet.repos');
    refused('[fleet]\nrepos = { "github.com/acme/api" = "" }\n', 'fleet.repos');
    const cred = refused('[fleet]\nrepos = { "https://bot:ghp_Token123@github.com/acme/api" = "/srv/src/api" }\n', 'fleet.repos');
    expect(cred.message).toMatch(/credentials/);
    expect(cred.message).not.toContain("ghp_Token123");
    refused('[fleet]\nrepos = { "acme api" = "/srv/src/api" }\n', 'fleet.repos');
    refused('[fleet]\nrepos = ["/srv/src/api"]\n', 'fleet.repos');
    refused('[fleet]\nlease_ttl_ms = 10\n', 'fleet.lease_ttl_ms');
    refused('[fleet]\nmax_concurrency = 0\n', 'fleet.max_concurrency');
  });
});
