import { afterEach, describe, expect, it } from 'vitest';
import { createLineRedactor, redactText, redactValue, REDACTED } from '../../main/core/redact.js';
import { clearSecretValues, registerSecretValues } from '../../main/core/secret-values.js';

// Shapes beyond a single-line token: connection strings, keys encoded once more, secrets that go on
// over the next line, tokens inside file names, known values in encoded form.

const ACCOUNT_KEY = 'Kq3vT9xLm2Pw8Rz5Yb1Nc7Hd4Jf6Gk0AeUx7QsWt2Vy9Bn3Mc5Xz8Lk1Jh4Gf6Ds0Ap2Qw5Er7Ty9Ui3Op6As8Df==';
const CONN = `DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey=${ACCOUNT_KEY};EndpointSuffix=core.windows.net`;
const SIG = 'Xk2%2BpLm9vR4sWz8Yb3Nc6Hd1Jf5Gk0Ae%2FUx7Q%3D';
const SAS_URL = `https://prodstore.blob.core.windows.net/backups/db.tar?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&sig=${SIG}`;
const PEM_BODY = ['MIIEowIBAAKCAQEAx7planted2PEMbody3zzzzQQabcdefGHIJKLmnopqrSTUVWX', 'Yb3Nc6Hd1Jf5Gk0AeUx7QsWt2Vy9Bn3Mc5Xz8Lk1Jh4Gf6Ds0Ap2Qw5Er7Ty9Ui3', 'Op6As8Df4Gh2Jk5Lz7Xc9Vb1Nm3Qw'];
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY.join('\n')}\n-----END RSA PRIVATE KEY-----\n`;
/** `base64 key.pem`: the whole PEM once more in base64, wrapped at 76 columns. */
const B64_PEM_LINES = Buffer.from(PEM).toString('base64').match(/.{1,76}/g)!;
const B64_PEM = B64_PEM_LINES.join('\n');

const leaksOf = (text: string, needles: string[]) => needles.filter((n) => text.includes(n));

afterEach(() => clearSecretValues());

describe('redaction by shape and by context', () => {
  it('an Azure storage connection string loses its AccountKey, a SAS its signature', () => {
    const out = redactText(`export AZURE_STORAGE_CONNECTION_STRING="${CONN}"`);
    expect(out).not.toContain(ACCOUNT_KEY.slice(0, 20));
    expect(out).toContain(`AccountName=prodstore;AccountKey=${REDACTED};EndpointSuffix=core.windows.net`);
    const sas = redactText(`curl -o db.tar '${SAS_URL}'`);
    expect(sas).not.toContain(SIG.slice(0, 12));
    expect(sas).toContain(`&sig=${REDACTED}'`);
    const sb = redactText(`Endpoint=sb://bus.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=x&sig=${SIG}&se=1&skn=r`);
    expect(sb).not.toContain(SIG.slice(0, 12));
    // A URL without a signature is left as it is.
    expect(redactText('https://example.com/?sig=short&design=42')).toBe('https://example.com/?sig=short&design=42');
  });

  it('a base64-encoded private key is redacted with every wrapped line, a base64 certificate is not', () => {
    const needles = B64_PEM_LINES.filter((l) => l.length >= 12);
    expect(leaksOf(redactText(`tls.key: ${B64_PEM}\nnext: value`), needles)).toEqual([]);
    expect(redactText(`tls.key: ${B64_PEM}\nnext: value`)).toContain('\nnext: value');
    // In a JSON string (an event line), wrapped with `\n` escapes.
    const json = JSON.stringify({ text: `key:\n${B64_PEM}\ndone` });
    const out = redactText(json);
    expect(leaksOf(out, needles)).toEqual([]);
    expect(JSON.parse(out).text).toMatch(/done$/);
    // One unbroken blob (a Kubernetes secret's data field).
    expect(leaksOf(redactText(`"tls.key":"${B64_PEM_LINES.join('')}"`), needles)).toEqual([]);
    const cert = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');
    expect(redactText(`ca.crt: ${cert}`)).toBe(`ca.crt: ${cert}`);
  });

  it('a token wrapped over two lines loses both lines; ordinary text after a secret stays', () => {
    const token = 'sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901Vwx234';
    const wrapped = `OPENAI_API_KEY is ${token.slice(0, 40)}\n${token.slice(40)}\nDone.`;
    const out = redactText(wrapped);
    expect(out).toBe(`OPENAI_API_KEY is ${REDACTED}\n${REDACTED}\nDone.`);
    expect(redactText(`token ${token}\nthen we ran the tests\nAll good`)).toBe(`token ${REDACTED}\nthen we ran the tests\nAll good`);
    // A diff of a file that held the wrapped token.
    expect(redactText(`+key: ${token.slice(0, 40)}\n+${token.slice(40)}\n+other: 1`)).toBe(`+key: ${REDACTED}\n+${REDACTED}\n+other: 1`);
  });

  it('the line redactor (a worker stdout) redacts the continuation line of a wrapped key or token', () => {
    const redact = createLineRedactor();
    const lines = ['found credential -----BEGIN RSA PRIVATE KEY-----', ...PEM_BODY, '-----END RSA PRIVATE KEY-----', 'next step', ...B64_PEM_LINES, 'after', 'sk-ant-api03-Qw5Er7Ty9Ui3Op6As8Df4Gh2', 'Jk5Lz7Xc9Vb1Nm3Qw88', 'plain words'];
    const out = lines.map(redact);
    expect(leaksOf(out.join('\n'), [...PEM_BODY, ...B64_PEM_LINES.filter((l) => l.length >= 12), 'Jk5Lz7Xc9Vb1']).length).toBe(0);
    expect(out).toContain('next step');
    expect(out).toContain('after');
    expect(out.at(-1)).toBe('plain words');
  });

  it('a token inside a file name is redacted (after `_` or `-` too)', () => {
    const ghp = 'ghp_' + 'Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx';
    for (const name of [`notes_${ghp}.txt`, `backup-${ghp}.tar`, `dir/${ghp}_old.md`, 'keys/AKIAIOSFODNN7EXAMPLE_prod.txt']) {
      expect(redactText(`diff --git a/${name} b/${name}`)).not.toMatch(/Ab1Cd2Ef3Gh4|IOSFODNN7EXA/);
    }
    // An object key naming such a file (a worker's `write_files`) is redacted too; a payload without one
    // comes back as the same object (copy on write).
    const files = redactValue({ write_files: { [`notes_${ghp}.txt`]: 'x' }, inputTokens: 3 });
    expect(JSON.stringify(files)).not.toContain('Ab1Cd2Ef3Gh4');
    const plain = { changedFiles: ['a.ts'], inputTokens: 3, nested: { fileName: 'src/x.ts' } };
    expect(redactValue(plain)).toBe(plain);
    // Words that merely contain a prefix stay.
    expect(redactText('risk-assessment-for-the-diskless-nodes.md')).toBe('risk-assessment-for-the-diskless-nodes.md');
  });
});

describe('known secret values in other forms', () => {
  const KEY = 'zz9plural-z-alpha-7QKD';

  it('base64 (at any alignment), hex and URL-encoded forms of a registered value are redacted', () => {
    registerSecretValues([KEY, 'p@ss w/rd:Quartz-1187']);
    const forms = [
      Buffer.from(KEY).toString('base64'),
      Buffer.from(`user:${KEY}`).toString('base64'),
      Buffer.from(`u:${KEY}`).toString('base64url'),
      Buffer.from(KEY).toString('hex'),
      encodeURIComponent('p@ss w/rd:Quartz-1187'),
    ];
    for (const f of forms) {
      const out = redactText(`Authorization: something ${f} end`);
      expect(out, f).toContain(REDACTED);
      expect(out).not.toContain(f.slice(4, 16));
    }
    // Not every base64 text: one of another value stays.
    const other = Buffer.from('hello there, nothing secret').toString('base64');
    expect(redactText(other)).toBe(other);
  });

  it('a registered value printed across two or three lines is redacted on each', () => {
    registerSecretValues([KEY]);
    expect(redactText(`gateway key zz9plural-z-\nalpha-7QKD and more`)).toBe(`gateway key ${REDACTED}\n${REDACTED} and more`);
    const three = redactText(`key: zz9plu\nral-z-alp\nha-7QKD\nend`);
    expect(three).not.toMatch(/zz9plu|ral-z-alp|ha-7QKD/);
    expect(three.endsWith('\nend')).toBe(true);
    // A line that ends with the start of the value but goes on with something else is left alone.
    expect(redactText('prefix zz9plural\nsomething else')).toBe('prefix zz9plural\nsomething else');
  });
});
