// The console window's only bridge: one method per command (from the plain names list) plus `on(event)`.
// No generic invoke(channel) is exposed. Sandboxed: imports nothing but electron and the names.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { COMMAND_NAMES } from '../main/commands/names.js';

const CHANNELS = { event: 'lw:event', navigate: 'lw:navigate', scheduler: 'lw:scheduler' } as const;
type Channel = keyof typeof CHANNELS;

const commands: Record<string, (input?: unknown) => Promise<unknown>> = {};
for (const name of COMMAND_NAMES) commands[name] = (input?: unknown) => ipcRenderer.invoke(`lw:${name}`, input ?? {});

contextBridge.exposeInMainWorld('lightworker', {
  commands,
  on(event: Channel, fn: (payload: unknown) => void): () => void {
    const channel = CHANNELS[event];
    if (!channel) throw new Error(`lightworker.on: unknown event "${String(event)}"`);
    const listener = (_e: IpcRendererEvent, payload: unknown) => fn(payload);
    ipcRenderer.on(channel, listener);
    return () => ipcRenderer.removeListener(channel, listener);
  },
});
