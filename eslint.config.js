import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** Layers (DESIGN §2): what each folder must not import. */
const LAYER_RULES = [
  { folder: "src/domain", forbidden: ["../store/*", "../engine/*", "../events/*", "../browser/*", "../platforms/*", "../api/*", "../mcp/*", "../sandbox/*", "playwright", "better-sqlite3", "hono"] },
  { folder: "src/store", forbidden: ["../engine/*", "../events/*", "../browser/*", "../platforms/*", "../api/*", "../mcp/*", "playwright", "hono"] },
  { folder: "src/engine", forbidden: ["../browser/*", "../../browser/*", "../platforms/*", "../../platforms/*", "../api/*", "../../api/*", "../mcp/*", "../../mcp/*", "../inbox/*", "../../inbox/*", "playwright", "hono"] },
  { folder: "src/inbox", forbidden: ["../store/*", "../browser/*", "../platforms/*", "../api/*", "../mcp/*", "../web/*", "playwright", "better-sqlite3"] },
  { folder: "src/events", forbidden: ["../browser/*", "../../browser/*", "../platforms/*", "../../platforms/*", "../api/*", "../../api/*", "../mcp/*", "../../mcp/*", "playwright", "hono"] },
  { folder: "src/api", forbidden: ["../store/*", "../../store/*", "../browser/*", "../../browser/*", "playwright", "better-sqlite3"] },
  { folder: "src/web", forbidden: ["../store/*", "../../store/*", "../browser/*", "../../browser/*", "../mcp/*", "../../mcp/*", "playwright", "better-sqlite3"] },
  { folder: "src/mcp", forbidden: ["../store/*", "../../store/*", "../browser/*", "../../browser/*", "playwright", "better-sqlite3"] },
  { folder: "src/platforms", forbidden: ["../../store/*", "../../api/*", "../../mcp/*", "better-sqlite3", "hono"] },
  { folder: "src/metrics", forbidden: ["../store/*", "../browser/*", "../platforms/*", "../api/*", "../mcp/*", "../web/*", "../inbox/*", "../sandbox/*", "playwright", "better-sqlite3", "hono"] },
  { folder: "src/sandbox", forbidden: ["../store/*", "../engine/*", "../events/*", "../api/*", "../mcp/*", "../browser/*", "better-sqlite3"] },
];

/**
 * SQLite's locks are POSIX locks: closing any descriptor of the database, -wal or -shm file drops
 * every lock the process holds on it (decisions: "The database's files are SQLite's alone"). The
 * product never opens a file by descriptor or copies one; whole-file reads and writes stay for its
 * own files (migrations, the key file), and none of them is given a database path.
 */
const DESCRIPTOR_CALLS = ["open", "openSync", "close", "closeSync", "read", "readSync", "createReadStream", "createWriteStream", "copyFile", "copyFileSync", "cp", "cpSync"];
const FILE_DESCRIPTOR_RULE = {
  files: ["src/**/*.ts"],
  rules: {
    "no-restricted-imports": [
      "error",
      ...["fs", "node:fs", "fs/promises", "node:fs/promises"].map((name) => ({
        name,
        importNames: DESCRIPTOR_CALLS,
        message: "Only SQLite opens and closes the database's files; a descriptor closed here drops its locks (docs/decisions.md).",
      })),
    ],
  },
};

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "scratch/", "test-artifacts/", "data/"] },
  js.configs.recommended,
  { files: ["**/*.js", "**/*.mjs"], languageOptions: { globals: { process: "readonly", console: "readonly" } } },
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      // A promise returned from inside try/catch escapes the catch unless awaited.
      "@typescript-eslint/return-await": ["error", "in-try-catch"],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  ...LAYER_RULES.map(({ folder, forbidden }) => ({
    files: [`${folder}/**/*.ts`],
    rules: {
      // Types may cross layers (a record's shape); code may not.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        { patterns: forbidden.map((group) => ({ group: [group], allowTypeImports: true, message: `${folder} must not import this (DESIGN §2 layers).` })) },
      ],
    },
  })),
  FILE_DESCRIPTOR_RULE,
);
