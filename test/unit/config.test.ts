import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONFIG_TEMPLATE, defaultConfig, loadConfig, parseConfig } from '../../main/core/config.js';
import { tempDir } from '../helpers/env.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

describe('config.toml', () => {
  it('the documented template is valid and equals the defaults', () => {
    expect(parseConfig(parse(CONFIG_TEMPLATE))).toEqual(defaultConfig());
  });

  it('names the offending key for an unknown key, a wrong type and an out-of-range value', () => {
    const cases: [string, RegExp][] = [
      ['[scheduler]\nmax_concurency = 4\n', /scheduler\.max_concurency/],
      ['[scheduler]\nmax_concurrency = "four"\n', /scheduler\.max_concurrency/],
      ['[approvals]\ndefault_mode = "yolo"\n', /approvals\.default_mode/],
      ['[gateways.local]\nbase_url = "not a url"\nkey_env = "K"\n', /gateways\.local\.base_url/],
    ];
    for (const [text, key] of cases) {
      const path = join(t.dir, 'config.toml');
      writeFileSync(path, text);
      expect(() => loadConfig(path)).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(key) }));
    }
  });

  it('refuses a file that is not TOML, saying where', () => {
    const path = join(t.dir, 'config.toml');
    writeFileSync(path, '[scheduler\nmax = 1');
    expect(() => loadConfig(path)).toThrow(expect.objectContaining({ code: 'invalid_input', message: expect.stringMatching(/not valid TOML/) }));
  });
});
