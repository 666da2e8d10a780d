import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../../main/mcp/tools.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };

/** Figures the README states that the code decides: they must move together. */
describe('the README tells the truth about', () => {
  it('the number of MCP tools', () => {
    const stated = /MCP server\*\* \(`lightworker mcp`, stdio\): (\d+) tools/.exec(readme)?.[1];
    expect(Number(stated)).toBe(MCP_TOOLS.length);
  });

  it('the Node range package.json declares', () => {
    expect(readme).toContain(`\`engines\`: \`${pkg.engines.node}\``);
  });
});
