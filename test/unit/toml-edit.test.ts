import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { CONFIG_TEMPLATE } from '../../main/core/config.js';
import { editToml } from '../../main/core/toml-edit.js';

type Doc = Record<string, any>;
const edit = (text: string, change: (d: Doc) => void): string => {
  const d = structuredClone(parse(text)) as Doc;
  change(d);
  return editToml(text, d);
};

const HAND_WRITTEN = `# my LightWorker config
# (hand-written; keep these comments)

[scheduler]
max_concurrency = 4   # cores I can spare
default_worker = "mock"

# approvals: careful
[approvals]
allow_mcp = false

[models]
allow = [
  "gpt-5.5",        # the big one
  "gpt-5.5-mini",
]
fast = 'gpt-5.5-mini'
per_worker = { claude-code = { fast = "claude-haiku-4-5", reasoning = "claude-sonnet-4-5" } }

[profiles.deep]
model = "gpt-5.5"   # pinned
kinds = ["execute"]

[gateways.local]
base_url = "http://127.0.0.1:8080/v1"
key_env = "LOCAL_KEY"

# trailing note
`;

describe('editToml', () => {
  it('replaces a value in place and keeps every comment, blank line and the trailing comment of that line', () => {
    const out = edit(HAND_WRITTEN, (d) => (d.scheduler.max_concurrency = 8));
    expect(out).toBe(HAND_WRITTEN.replace('max_concurrency = 4   # cores', 'max_concurrency = 8   # cores'));
  });

  it('adds a missing key at the end of its table, before the blank line and comment that follow it', () => {
    const out = edit(HAND_WRITTEN, (d) => (d.scheduler.per_root = 1));
    expect(out).toBe(HAND_WRITTEN.replace('default_worker = "mock"\n', 'default_worker = "mock"\nper_root = 1\n'));
  });

  it('creates a missing table at the end of the file', () => {
    const out = edit(HAND_WRITTEN, (d) => (d.verify = { auto_repair: 2 }));
    expect(out).toBe(`${HAND_WRITTEN}\n[verify]\nauto_repair = 2\n`);
    const nested = edit(HAND_WRITTEN, (d) => (d.profiles.quick = { model: 'gpt-5.5-mini', kinds: ['explore'] }));
    expect(nested).toContain('\n[profiles.quick]\nmodel = "gpt-5.5-mini"\nkinds = ["explore"]\n');
    expect(parse(nested)).toMatchObject({ profiles: { deep: { model: 'gpt-5.5' }, quick: { model: 'gpt-5.5-mini' } } });
  });

  it('replaces a multi-line array whole and leaves the lines around it alone', () => {
    const out = edit(HAND_WRITTEN, (d) => d.models.allow.push('mock-model'));
    expect(out).toContain('allow = ["gpt-5.5", "gpt-5.5-mini", "mock-model"]\nfast = \'gpt-5.5-mini\'\n');
    expect(out).toContain('# my LightWorker config\n# (hand-written; keep these comments)\n');
  });

  it('sets a value inside an inline table by rewriting that inline table only', () => {
    const out = edit(HAND_WRITTEN, (d) => (d.models.per_worker['claude-code'].fast = 'claude-sonnet-4-5'));
    expect(out).toContain('per_worker = { claude-code = { fast = "claude-sonnet-4-5", reasoning = "claude-sonnet-4-5" } }\n');
    expect(out.replace(/per_worker = .*\n/, '')).toBe(HAND_WRITTEN.replace(/per_worker = .*\n/, ''));
  });

  it('removes a table with its keys, keeping the comments that follow it', () => {
    const out = edit(HAND_WRITTEN, (d) => delete d.gateways.local);
    expect(out).not.toContain('gateways.local');
    expect(out).not.toContain('LOCAL_KEY');
    expect(out).toContain('# trailing note\n');
    expect(parse(out)).not.toHaveProperty('gateways');
    const key = edit(HAND_WRITTEN, (d) => delete d.profiles.deep.kinds);
    expect(key).toBe(HAND_WRITTEN.replace('kinds = ["execute"]\n', ''));
  });

  it('writes strings safely (quotes, backslashes, unicode, control characters) and quotes keys that need it', () => {
    const tricky = 'say "hi" \\ ok\tтест\u0001';
    const out = edit(HAND_WRITTEN, (d) => (d.setup = { '/abs/my repo': { setup: tricky } }));
    expect(out).toContain('[setup."/abs/my repo"]');
    expect((parse(out) as Doc).setup['/abs/my repo'].setup).toBe(tricky);
  });

  it('edits the documented template in place: every comment of it survives', () => {
    const out = edit(CONFIG_TEMPLATE, (d) => {
      d.models.fast = 'claude-haiku-4-5';
      d.scheduler.max_concurrency = 2;
    });
    const comments = (t: string) => t.split('\n').filter((l) => l.includes('#')).map((l) => l.slice(l.indexOf('#')));
    expect(comments(out)).toEqual(comments(CONFIG_TEMPLATE));
    expect(out.split('\n').length).toBe(CONFIG_TEMPLATE.split('\n').length);
    expect(parse(out)).toMatchObject({ models: { fast: 'claude-haiku-4-5' }, scheduler: { max_concurrency: 2 } });
  });

  it('starts an empty file with just the keys set', () => {
    expect(editToml('', { approvals: { allow_mcp: true } })).toBe('[approvals]\nallow_mcp = true\n');
  });

  it('leaves the text untouched when nothing changes', () => {
    expect(editToml(HAND_WRITTEN, parse(HAND_WRITTEN) as Doc)).toBe(HAND_WRITTEN);
  });
});

describe('editToml on other layouts', () => {
  it('adds a dotted key beside dotted keys that define the table', () => {
    const text = '# compact style\nscheduler.max_concurrency = 2 # two\n\n[approvals]\nallow_mcp = false\n';
    const out = edit(text, (d) => (d.scheduler.per_root = 1));
    expect(out).toBe('# compact style\nscheduler.max_concurrency = 2 # two\nscheduler.per_root = 1\n\n[approvals]\nallow_mcp = false\n');
  });

  it('keeps CRLF line ends, and a file without a final newline', () => {
    const crlf = '# win\r\n[scheduler]\r\nmax_concurrency = 2\r\n';
    expect(edit(crlf, (d) => (d.scheduler.per_root = 1))).toBe('# win\r\n[scheduler]\r\nmax_concurrency = 2\r\nper_root = 1\r\n');
    expect(edit(crlf, (d) => (d.verify = { timeout_s: 5 }))).toBe(`${crlf}\r\n[verify]\r\ntimeout_s = 5\r\n`);
    expect(edit('[scheduler]\nmax_concurrency = 2', (d) => (d.scheduler.per_root = 1))).toBe('[scheduler]\nmax_concurrency = 2\nper_root = 1\n');
  });

  it('leaves arrays of tables and multi-line strings it does not touch as they are', () => {
    const text = '[[extra]]\nname = "a"\n\n[scheduler]\nnote = """\nline one\nline = two\n"""\nmax_concurrency = 2\n';
    const out = edit(text, (d) => (d.scheduler.max_concurrency = 3));
    expect(out).toBe(text.replace('max_concurrency = 2', 'max_concurrency = 3'));
  });
});

describe('editToml: new nested tables', () => {
  it('writes no empty header for a table that only holds sub-tables', () => {
    expect(editToml('', { profiles: { quick: { model: 'm' } } })).toBe('[profiles.quick]\nmodel = "m"\n');
    expect(editToml('', { models: { per_worker: { a: { fast: 'x' }, b: { fast: 'y' } } } })).toBe('[models.per_worker.a]\nfast = "x"\n\n[models.per_worker.b]\nfast = "y"\n');
    expect(editToml('', { profiles: { empty: {} } })).toBe('[profiles.empty]\n');
  });
});
