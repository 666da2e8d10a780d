import { afterEach, describe, expect, it } from 'vitest';
import { containsSecret, createLineRedactor, redactText, redactValue, REDACTED } from '../../main/core/redact.js';
import { clearSecretValues, isSecretName, registerSecretValues, secretValuesOfEnv } from '../../main/core/secret-values.js';
import { nameFromObjective } from '../../main/tasks/create.js';

// Each entry: text containing a secret, and the secret itself (must be gone after redaction).
export const SECRET_CORPUS: { name: string; text: string; secret: string }[] = [
  { name: 'openai key', text: 'use OPENAI key sk-proj-AbCdEf0123456789abcdefGHIJ to call', secret: 'sk-proj-AbCdEf0123456789abcdefGHIJ' },
  { name: 'anthropic key', text: 'key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123', secret: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123' },
  { name: 'github token', text: 'token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB ok', secret: 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB' },
  { name: 'google key', text: 'AIzaSyA1234567890abcdefghijklmnopqrstuv', secret: 'AIzaSyA1234567890abcdefghijklmnopqrstuv' },
  { name: 'slack token', text: 'xoxb-123456789012-abcdefghijkl', secret: 'xoxb-123456789012-abcdefghijkl' },
  { name: 'aws access key', text: 'AKIAIOSFODNN7EXAMPLE is the id', secret: 'AKIAIOSFODNN7EXAMPLE' },
  { name: 'aws secret', text: 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
  { name: 'bearer', text: 'curl -H "Authorization: Bearer abc.def-ghi_jkl0123456789"', secret: 'abc.def-ghi_jkl0123456789' },
  {
    name: 'jwt',
    text: 'cookie=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;',
    secret: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  },
  {
    name: 'pem',
    text: 'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAtopsecretmaterial\nabc\n-----END RSA PRIVATE KEY-----\nafter',
    secret: 'MIIEowIBAAKCAQEAtopsecretmaterial',
  },
  { name: 'postgres url', text: 'DATABASE_URL=postgres://admin:hunter2pass@db.local:5432/app', secret: 'hunter2pass' },
  { name: 'password=', text: 'login with password=CorrectHorse42 please', secret: 'CorrectHorse42' },
  { name: 'json api_key', text: '{"api_key": "live-1234-abcd-5678"}', secret: 'live-1234-abcd-5678' },
  { name: 'yaml secret', text: "client_secret: 'q8w7e6r5t4y3'", secret: 'q8w7e6r5t4y3' },
  { name: 'env token', text: 'export GITHUB_TOKEN=plainvalue987654', secret: 'plainvalue987654' },
  { name: 'stripe', text: 'sk_live_51HabcdefghijklmnopQRST', secret: 'sk_live_51HabcdefghijklmnopQRST' },
  { name: 'unlabelled aws secret', text: 'export X=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY &&', secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
  { name: 'unlabelled aws secret, no slash', text: '"Tq7xK2pLm9vR4sWz8Yb3Nc6Hd1Jf5Gk0AeUx7Qa9"', secret: 'Tq7xK2pLm9vR4sWz8Yb3Nc6Hd1Jf5Gk0AeUx7Qa9' },
  { name: 'jwt cut short', text: 'token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMj…', secret: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9' },
];

describe('redaction', () => {
  for (const c of SECRET_CORPUS) {
    it(`removes a ${c.name}`, () => {
      const out = redactText(c.text);
      expect(out).not.toContain(c.secret);
      expect(out).toContain(REDACTED);
      expect(containsSecret(c.text)).toBe(true);
    });
  }

  it('leaves ordinary text and code alone', () => {
    const text = 'Fix the flaky test in src/tokens.ts; count input_tokens and keep max_tokens = 4096. See https://example.com/a?b=1';
    expect(redactText(text)).toBe(text);
  });

  it('is idempotent', () => {
    for (const c of SECRET_CORPUS) expect(redactText(redactText(c.text))).toBe(redactText(c.text));
  });

  it('redacts nested values and secret-named keys but keeps numbers', () => {
    const v = redactValue({ headers: { authorization: 'whatever-opaque' }, usage: { input_tokens: 10 }, list: ['sk-ant-api03-abcdefghijklmnopqrstu'] });
    expect(v.headers.authorization).toBe(REDACTED);
    expect(v.usage.input_tokens).toBe(10);
    expect(v.list[0]).toBe(REDACTED);
  });

  it('copies only what it changes: a clean value comes back as it is, and the original is never altered', () => {
    const clean = { type: 'worker.usage', input: 10, nested: { a: ['x', 'y'], b: null } };
    expect(redactValue(clean)).toBe(clean);
    const dirty = { keep: { a: 1 }, list: ['fine', 'sk-ant-api03-abcdefghijklmnopqrstu'], api_key: 'opaque-value' };
    const out = redactValue(dirty);
    expect(out).not.toBe(dirty);
    expect(out).toEqual({ keep: { a: 1 }, list: ['fine', REDACTED], api_key: REDACTED });
    expect(out.keep).toBe(dirty.keep); // untouched parts are shared, not copied
    expect(dirty).toEqual({ keep: { a: 1 }, list: ['fine', 'sk-ant-api03-abcdefghijklmnopqrstu'], api_key: 'opaque-value' });
  });
});

describe('value-based redaction', () => {
  afterEach(() => clearSecretValues());

  it('redacts a registered value whatever its shape, wherever it appears', () => {
    const key = 'zz9plural-z-alpha-7QKD';
    expect(redactText(`key ${key}.`)).toBe(`key ${key}.`); // no shape rule knows it
    registerSecretValues([key]);
    expect(redactText(`key ${key}. again:${key}`)).toBe(`key ${REDACTED}. again:${REDACTED}`);
    expect(redactValue({ note: `x${key}y` }).note).toBe(`x${REDACTED}y`);
  });

  it('replaces the longest of overlapping values whole, and JSON-escaped copies too', () => {
    registerSecretValues(['abcdefgh12', 'abcdefgh12345678', 'quo"te\\value']);
    expect(redactText('abcdefgh12345678')).toBe(REDACTED);
    expect(redactText(JSON.stringify({ v: 'quo"te\\value' }))).toBe(`{"v":"${REDACTED}"}`);
  });

  it('redacts the piece of a value left at either end of a cut text (a tail, a first line)', () => {
    registerSecretValues(['zz9plural-z-alpha-7QKD']);
    expect(redactText('alpha-7QKD and then the output went on')).toBe(`${REDACTED} and then the output went on`);
    expect(redactText('the key was zz9plural-z-a')).toBe(`the key was ${REDACTED}`);
    expect(redactText('a-7QKD')).toBe(REDACTED);
    // Short pieces and pieces in the middle are ordinary text.
    expect(redactText('7QKD zz9pl')).toBe('7QKD zz9pl');
    expect(redactText('an alpha-7QKD in the middle')).toBe('an alpha-7QKD in the middle');
  });

  it('ignores short and trivial values so common words survive', () => {
    registerSecretValues(['hunter', 'true', '12345678901', 'disabled', 'Production', '', null, undefined]);
    expect(redactText('hunter true 12345678901 disabled Production')).toBe('hunter true 12345678901 disabled Production');
    registerSecretValues(['hunter2hunter']);
    expect(redactText('pw hunter2hunter')).toBe(`pw ${REDACTED}`);
  });

  it('takes secret-named variables and named key variables from an environment', () => {
    const env = { OPENAI_API_KEY: 'v-openai-value', DB_PASSWORD: 'v-db-password', SSH_AUTH_SOCK: '/tmp/ssh-agent.sock', PATH: '/usr/bin:/bin', GW: 'v-gateway-key' };
    expect(secretValuesOfEnv(env, ['GW']).sort()).toEqual(['v-db-password', 'v-gateway-key', 'v-openai-value']);
    for (const name of ['ANTHROPIC_AUTH_TOKEN', 'NPM_AUTHTOKEN', 'AWS_SECRET_ACCESS_KEY', 'GITHUB_PAT_TOKEN', 'npm_config__auth', 'DB_PASS', 'OPENAI_APIKEY']) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of ['XAUTHORITY', 'GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'KEYBOARD_LAYOUT', 'SSH_AUTH_SOCK', 'PWD', 'OLDPWD', 'PASSENGER_ENV']) {
      expect(isSecretName(name), name).toBe(false);
    }
  });
});

describe('shape rules that must not fire', () => {
  it('leaves git SHAs, paths and long identifiers alone', () => {
    const text = [
      'commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3',
      'A94A8FE5CCB19BA61C4C0873D391E987982FBBD3',
      'src/components/Button2/index/Foo3Barxxxx',
      'ThisIsAVeryLongIdentifierName12345678901',
      'worktrees/01JABCDEFGHJKMNPQRSTVWXYZ0',
    ].join('\n');
    expect(redactText(text)).toBe(text);
  });
});

describe('auto-generated task names', () => {
  it('are redacted before they are cut, so a secret cut short never survives', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    expect(nameFromObjective(`Investigate why login rejects this token: ${jwt}\nmore`)).toBe(`Investigate why login rejects this token: ${REDACTED}`);
  });

  it('never cut inside a redaction marker', () => {
    const name = nameFromObjective(`${'a'.repeat(72)} sk-proj-AbCdEf0123456789abcdefGHIJ and more words after it`);
    expect(name).toBe(`${'a'.repeat(72)}…`);
    expect(nameFromObjective('x'.repeat(100))).toBe(`${'x'.repeat(77)}…`);
  });
});

describe('a private key printed line by line', () => {
  const body = ['MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun', 'VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK', 'LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo'];
  const pem = ['-----BEGIN RSA PRIVATE KEY-----', ...body, '-----END RSA PRIVATE KEY-----'];

  it('redacts the body lines between BEGIN and END, one line at a time, and nothing after END', () => {
    const redact = createLineRedactor();
    const out = [...pem, 'plain output after the key'].map(redact);
    for (const line of body) expect(out.join('\n')).not.toContain(line.slice(0, 16));
    expect(out.at(-1)).toBe('plain output after the key');
  });

  it('keeps an event stream parseable: only the base64 inside a JSON line is replaced', () => {
    const redact = createLineRedactor();
    const lines = [JSON.stringify({ type: 'text', text: pem[0] }), ...body.map((b) => JSON.stringify({ type: 'text', text: b })), JSON.stringify({ type: 'text', text: pem.at(-1) })];
    const out = lines.map(redact);
    for (const l of out) expect(() => JSON.parse(l)).not.toThrow();
    expect(out.join('\n')).not.toContain(body[1].slice(0, 16));
  });

  it('redacts the end of a key whose BEGIN line was cut off (an output tail)', () => {
    const tail = [...body.slice(1), pem.at(-1)].join('\n');
    expect(redactText(`...\n${tail}\ndone`)).toBe(`...\n${REDACTED}\ndone`);
  });
});
