import type * as vscode from 'vscode';

/**
 * The part of the `vscode` module the bridge uses. The extension passes the real module; tests under
 * Node pass a stub (test/fixtures/vscode-stub). Typed from @types/vscode, so the real module must fit.
 */
export interface BridgeApi {
  extensions: { readonly all: readonly Pick<vscode.Extension<unknown>, 'id' | 'extensionPath' | 'isActive' | 'packageJSON'>[] };
  window: { createTerminal(options: vscode.ExtensionTerminalOptions): Pick<vscode.Terminal, 'show' | 'dispose'> };
  workspace: { readonly workspaceFolders: readonly { readonly uri: { readonly fsPath: string } }[] | undefined };
}

/** A `vscode.Event` without the module's EventEmitter (so the stub needs none). */
export function createEmitter<T>(): { event: vscode.Event<T>; fire(value: T): void } {
  const listeners = new Set<(value: T) => unknown>();
  return {
    event: (listener, thisArgs?: unknown) => {
      const bound = (v: T) => listener.call(thisArgs, v);
      listeners.add(bound);
      return { dispose: () => listeners.delete(bound) };
    },
    fire: (value) => {
      for (const l of [...listeners]) l(value);
    },
  };
}
