import { MessageChannel, Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { awaitReply } from '../../main/store/pg/bridge.js';

/**
 * The PostgreSQL bridge blocks the main thread until its connection thread answers. A thread that sets the
 * flag and then notifies late (descheduled between the two, as on a loaded machine) must not make the
 * next call give up: before the fix the bridge took that stale wake-up for "did not answer within 120 s"
 * and closed the store for good, so a fleet runner sat silent and ran nothing.
 */
const THREAD = `
const { workerData } = require('node:worker_threads');
const flag = new Int32Array(workerData.shared);
const port = workerData.port;
port.on('message', (m) => {
  setTimeout(() => {
    port.postMessage({ n: m.n });
    Atomics.store(flag, 0, 1);
    setTimeout(() => Atomics.notify(flag, 0), m.notifyLagMs);
  }, m.answerAfterMs);
});
`;

let worker: Worker | null = null;
afterEach(async () => {
  await worker?.terminate();
  worker = null;
});

function start() {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  worker = new Worker(THREAD, { eval: true, workerData: { shared: flag.buffer, port: port2 }, transferList: [port2] });
  const call = (m: { n: number; answerAfterMs: number; notifyLagMs: number }) => {
    Atomics.store(flag, 0, 0);
    port1.postMessage(m);
  };
  return { flag, port: port1, call };
}

describe('the PostgreSQL bridge wait', () => {
  it("a late notify from the previous answer does not end the next call's wait before its answer", async () => {
    const { flag, port, call } = start();
    await new Promise((r) => setTimeout(r, 50)); // the thread is up
    // Call 1: answered at once, its notify 100 ms late. The main thread looks only after the flag is set,
    // so call 1 ends without sleeping and the notify is still to come.
    call({ n: 1, answerAfterMs: 0, notifyLagMs: 100 });
    const until = Date.now() + 5000;
    while (Atomics.load(flag, 0) === 0 && Date.now() < until) Atomics.wait(flag, 0, 0, 5);
    expect(awaitReply(port, flag, 1000)?.message).toEqual({ n: 1 });
    // Call 2: answered after 300 ms; call 1's notify arrives at about 100 ms, while call 2 waits.
    call({ n: 2, answerAfterMs: 300, notifyLagMs: 0 });
    const t0 = Date.now();
    expect(awaitReply(port, flag, 5000)?.message).toEqual({ n: 2 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  });

  it('gives up after the timeout when no answer comes, and takes the answer when it does', async () => {
    const { flag, port, call } = start();
    call({ n: 3, answerAfterMs: 10_000, notifyLagMs: 0 });
    expect(awaitReply(port, flag, 200)).toBeUndefined();
    call({ n: 4, answerAfterMs: 0, notifyLagMs: 0 });
    expect(awaitReply(port, flag, 5000)?.message).toEqual({ n: 4 });
  });
});
