import { COMMANDS } from '../commands/index.js';
import { runCommand, type CommandDef } from '../commands/table.js';
import { toErrorPayload } from '../core/errors.js';
import type { Engine } from '../engine.js';
import { isTrustedSender } from './sender-check.js';

/** The part of Electron's ipcMain this module uses (a fake in unit tests). */
export interface IpcMainLike {
  handle(channel: string, fn: (event: { senderFrame?: { url: string } | null }, input: unknown) => Promise<unknown>): void;
}

export type IpcReply = { ok: true; data: unknown } | { ok: false; error: { code: string; message: string } };

/**
 * One `lw:<command>` handler per command in the table. Inputs are validated by the command's own zod
 * schema inside runCommand; the sender must be our renderer. Replies mirror the HTTP API.
 */
export function registerIpcHandlers(ipcMain: IpcMainLike, engine: Engine, rendererUrl: () => string, table: ReadonlyMap<string, CommandDef> = COMMANDS): string[] {
  const channels: string[] = [];
  for (const name of table.keys()) {
    const channel = `lw:${name}`;
    ipcMain.handle(channel, async (event, input): Promise<IpcReply> => {
      if (!isTrustedSender(event.senderFrame?.url, rendererUrl())) {
        return { ok: false, error: { code: 'forbidden', message: `${name}: IPC from ${event.senderFrame?.url ?? 'an unknown frame'} is not the LightWorker console` } };
      }
      try {
        const data = await runCommand(table, { engine, face: 'ipc', depth: 0 }, name, input);
        return { ok: true, data: data ?? null };
      } catch (err) {
        return { ok: false, error: toErrorPayload(err) };
      }
    });
    channels.push(channel);
  }
  return channels;
}
