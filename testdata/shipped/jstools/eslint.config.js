'use strict';
module.exports = [
  {
    files: ['src/**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', console: 'readonly' } },
    rules: { 'no-unused-vars': 'error', 'no-undef': 'error', eqeqeq: 'error', semi: 'error' },
  },
];
