import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import vue from 'eslint-plugin-vue';
import globals from 'globals';
import layering from './eslint-rules/layering.js';
import citations from './eslint-rules/no-citations.js';

export default tseslint.config(
  { ignores: ['node_modules/**', 'out/**', 'vscode-extension/out/**', 'dist/**', 'test-results/**', 'playwright-report/**', '.lightworker-dev/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...vue.configs['flat/recommended'],
  {
    files: ['**/*.vue'],
    languageOptions: { parserOptions: { parser: tseslint.parser } },
  },
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      'vue/multi-word-component-names': 'off',
      'vue/max-attributes-per-line': 'off',
      'vue/singleline-html-element-content-newline': 'off',
      'vue/html-self-closing': 'off',
    },
  },
  {
    // Tests read untyped JSON from CLIs and protocols all day.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-empty-pattern': 'off' },
  },
  // The import boundaries of ../shared/ARCHITECTURE.md.
  {
    files: ['main/**/*.ts'],
    ignores: ['main/desktop/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'electron', message: 'Only main/desktop/** may import electron.' }] }],
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  // Comments explain on their own (eslint-rules/no-citations.js).
  {
    files: ['main/**/*.{ts,mts,js,mjs}', 'renderer/**/*.{ts,vue}', 'preload/**/*.ts', 'test/**/*.{ts,js,mjs}', 'scripts/**/*.{ts,js,mjs}', 'eslint-rules/**/*.js'],
    plugins: { citations },
    rules: { 'citations/no-citations': 'error' },
  },
  // The layers of main/ (eslint-rules/layering.js): an import against them is an error.
  {
    files: ['main/**/*.{ts,mts,js,mjs}'],
    plugins: { layering },
    rules: { 'layering/layers': 'error' },
  },
  {
    files: ['renderer/**/*.{ts,vue}'],
    ignores: ['renderer/vite.config.ts'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'electron', message: 'The renderer talks to the engine only through its API client.' }],
          patterns: [
            { group: ['node:*'], message: 'The renderer runs in a browser sandbox.' },
            { group: ['**/main/**'], allowTypeImports: true, message: 'The renderer may import only types from main/.' },
          ],
        },
      ],
    },
  },
  {
    files: ['preload/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!electron$|\\.\\./main/commands/names(\\.js)?$|\\./).*', message: 'preload imports only electron and the command names.' }] },
      ],
    },
  },
);
