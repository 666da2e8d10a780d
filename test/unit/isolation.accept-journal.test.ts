import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeJournal, interruptedJournals, journalDir, leaveJournal, openJournal } from '../../main/isolation/accept-journal.js';
import { tempDir } from '../helpers/env.js';

/**
 * Every command looks for interrupted accepts first; the journal folder exists only while it holds a
 * journal, so that look is one stat when no accept is under way — and never misses a journal.
 */

let t: ReturnType<typeof tempDir> | undefined;
afterEach(() => t?.cleanup());

const journal = (task: string) => ({ task, repo: '/nowhere', branch: 'main', onCheckout: true, oldTip: null, parent: 'p', newCommit: 'c', files: ['a.txt'], by: 'the CLI', unverified: false });

/** A journal left by a process that has exited (as a killed accept leaves it). */
function writeDeadJournal(home: string, task: string): void {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  mkdirSync(journalDir(home), { recursive: true });
  const j = { version: 1, ...journal(task), step: 'ref', pid: Number(child.stdout), start: null, host: hostname(), at: Date.now() };
  writeFileSync(join(journalDir(home), `${task}.json`), JSON.stringify(j));
}

describe('accept journals', () => {
  it('the folder goes with the last journal, and stays while another one is open', () => {
    t = tempDir();
    openJournal(t.dir, journal('A'));
    openJournal(t.dir, journal('B'));
    closeJournal(t.dir, 'A');
    expect(readdirSync(journalDir(t.dir))).toEqual(['B.json']);
    // B's accept stops without settling it: the next look finds it.
    leaveJournal('B');
    expect(interruptedJournals(t.dir).map((j) => j.task)).toEqual(['B']);
    closeJournal(t.dir, 'B');
    expect(existsSync(journalDir(t.dir))).toBe(false);
    expect(interruptedJournals(t.dir)).toEqual([]);
    // An accept after that makes the folder again.
    openJournal(t.dir, journal('C'));
    expect(readdirSync(journalDir(t.dir))).toEqual(['C.json']);
  });

  it("another process's journal is found, and an empty folder an older version left is removed by the first look", () => {
    t = tempDir();
    mkdirSync(journalDir(t.dir), { recursive: true });
    expect(interruptedJournals(t.dir)).toEqual([]);
    expect(existsSync(journalDir(t.dir))).toBe(false);
    writeDeadJournal(t.dir, 'D');
    expect(interruptedJournals(t.dir).map((j) => j.task)).toEqual(['D']);
    expect(existsSync(join(journalDir(t.dir), 'D.json'))).toBe(true);
  });
});
