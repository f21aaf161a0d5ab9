// The linter: typescript-eslint's recommended rules, and limits that keep functions small enough to read.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'generated/', 'data/', '.tmp/', '.build/', 'bench/.build/', 'dist/', 'test/golden/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      complexity: ['error', 20],
      // A value assigned once, after closures that read it were made (the issuer, known once listening).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    // Tests, the conformance suite and the benchmark read JSON from servers they do not trust: `any` is what arrives.
    files: ['test/**', 'conformance/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
