// ESLint (flat config) for the extension's TypeScript and its node scripts: typescript-eslint's
// recommended rules; formatting is prettier's job (npm run format:check), not ESLint's.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

export default tseslint.config(
  { ignores: ["dist/**", "out/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      // Unused arguments of interface implementations are named `_x`.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      // The wasm package is a directory next to the bundle, loaded with Node's require at run time.
      "@typescript-eslint/no-require-imports": "off",
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-constant-condition": ["error", { checkLoops: false }],
      // A `let` read by callbacks created before its one assignment (a process's handlers
      // reaching the client built after it) cannot be a const.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ["src/webview/**/*.ts"],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ["src/**/*.ts", "test/**/*.ts"],
    ignores: ["src/webview/**"],
    languageOptions: { globals: globals.node },
  },
  {
    files: ["**/*.mjs", "**/*.cjs"],
    languageOptions: { globals: globals.node },
    rules: { "no-empty": ["error", { allowEmptyCatch: true }] },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
