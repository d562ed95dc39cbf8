export default [
  {
    files: ["**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { document: "readonly", console: "readonly" } },
    rules: { "no-unused-vars": "warn", "no-undef": "error" },
  },
];
