// The chaos suite (`npm run chaos`) at a reduced size: the same code, 5 leader kills, 500 MCP messages, 20 MCP clients,
// 200 HTTP requests, the secret corpus once and the output floods at 10 MB. Every figure that must be zero
// is asserted zero.
// On main before the chaos fixes (custody, sweep, leases) this fails on survivors, stuck/lost tasks, leaks and the console's
// unauthenticated reads/token — that is the point: it is the proof that those fixes hold.
import { describe, expect, it } from 'vitest';
import { renderNotes, renderTable, runChaos } from '../chaos/suite.js';

describe('chaos suite, reduced size', () => {
  it('survives leader kills, competing schedulers, MCP and HTTP fuzz, and leaks no secret', async () => {
    const report = await runChaos({ kills: 5, leaders: 2, schedulers: 3, mcp: 500, mcpClients: 20, http: 200, acceptKills: 6, escapeRounds: 0, seed: 11, taskTimeoutS: 10, custody: 6, damageTasks: 10, floodMb: 10, guards: 0, log: () => undefined });
    const zeros = Object.fromEntries(Object.keys(report.failures).map((k) => [k, 0]));
    // The table and notes name the figure, the tasks and the places when something is not zero.
    expect(report.failures, `${renderTable(report)}\n\n${renderNotes(report).join('\n')}`).toEqual(zeros);
    expect(report.kills.kills).toBe(5);
    expect(report.kills.takeoverMs.length).toBeGreaterThan(0);
    expect(report.mcp.expected).toBeGreaterThan(100);
    expect(report.accepts.kills).toBe(6);
  }, 300_000);
});
