// One CommonJS file for the editor's extension host: `vscode` is provided by the host, node:* by Node.
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'vscode-extension/src/extension.ts',
  platform: 'node',
  external: ['vscode', /^node:/],
  output: { file: 'vscode-extension/out/extension.cjs', format: 'cjs', sourcemap: false },
});
