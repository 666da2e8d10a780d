import { describe, expect, it } from 'vitest';
import { containsSecret, redactText, redactValue, REDACTED } from '../../main/core/redact.js';

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
});
