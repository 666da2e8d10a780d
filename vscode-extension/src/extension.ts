import * as vscode from 'vscode';
import { listAgents } from './agents.js';
import { startBridge, type Bridge } from './bridge-server.js';

let bridge: Bridge | null = null;
let output: vscode.OutputChannel | null = null;

async function start(version: string): Promise<Bridge> {
  const b = await startBridge({
    api: vscode,
    extensionVersion: version,
    revealTerminal: () => vscode.workspace.getConfiguration('lightworkerBridge').get<boolean>('revealTerminal', false),
  });
  output?.appendLine(`LightWorker bridge on http://127.0.0.1:${b.port} (discovery file ${b.discoveryPath}, mode 0600)`);
  return b;
}

/** Start the bridge when the editor has started; commands show its state and restart it. */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '0.0.0');
  output = vscode.window.createOutputChannel('LightWorker Bridge');
  context.subscriptions.push(output);
  bridge = await start(version);
  context.subscriptions.push(
    vscode.commands.registerCommand('lightworkerBridge.showStatus', () => {
      const text = bridge ? `LightWorker bridge: 127.0.0.1:${bridge.port}, discovery file ${bridge.discoveryPath}` : 'LightWorker bridge is stopped';
      void vscode.window.showInformationMessage(text);
    }),
    vscode.commands.registerCommand('lightworkerBridge.listAgents', () => {
      const agents = listAgents(vscode);
      output?.appendLine(JSON.stringify(agents, null, 2));
      output?.show(true);
      const names = agents.map((a) => `${a.label}${a.runnable ? '' : ' (not runnable)'}`).join(', ');
      void vscode.window.showInformationMessage(names ? `Agent extensions: ${names}` : 'No known agent extension is installed.');
    }),
    vscode.commands.registerCommand('lightworkerBridge.restart', async () => {
      await bridge?.stop();
      bridge = await start(version);
    }),
  );
}

/** Cancel running turns (their process trees end) and remove the discovery file. */
export async function deactivate(): Promise<void> {
  await bridge?.stop();
  bridge = null;
}
