import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // api-types.d.ts is generated (tools/codegen/panel-types.ts).
  {
    ignores: [
      'dist/',
      'node_modules/',
      '.venv/',
      '.venv-tools/',
      'coverage/',
      'panel/types/js/api-types.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  // The architecture, held: the operator and the gateway meet only in common/ (and in cli/, which
  // wires the processes), and common/ depends on neither.
  ...[
    ['operator', ['gateway', 'cli']],
    ['gateway', ['operator', 'cli']],
    ['common', ['operator', 'gateway', 'cli']],
  ].map(([side, others]) => ({
    files: [`${side}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: others.map((other) => ({
            group: [`**/${other}/*`, `**/${other}/**`],
            message: `${side}/ does not import from ${other}/: put what both sides use in common/`,
          })),
        },
      ],
    },
  })),
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // Build tools and bench helpers run by Node (tools/bundle/, bench/llhttp-proxy.mjs).
    files: ['tools/**/*.mjs', 'bench/**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The panel runs in the browser (type-checked by tsconfig.panel.json).
    files: ['panel/static/js/*.js'],
    languageOptions: { globals: globals.browser },
  },
);
