// Syntax highlighting for code blocks in agent text, as plain tokens: Prism (prismjs, pinned) is
// used only through its token API, `Prism.tokenize`, which returns strings and typed tokens;
// its HTML output (`Prism.highlight`, `highlightElement`) is never called, so no agent text is
// ever turned into HTML by it. markdown.ts makes a span (class `tok-<type>`, textContent) per
// token. Prism runs no eval and adds no inline style or script, so it fits the webview's CSP;
// it is loaded in manual mode (prismSetup.ts) so it never scans the page by itself.
//
// Cost: Prism's grammars are regular expressions (some superlinear on hostile input), so a block
// is tokenized only when it is at most
// MAX_HIGHLIGHT_CHARS long and has no line longer than MAX_HIGHLIGHT_LINE; anything larger is
// shown as plain text. Each highlighted block's work is then bounded by a constant, and a message
// costs time linear in its length. The bundle grows by the grammars below (docs/benchmarks.md:
// the webview bundle's size before and after).
//
// Pure (no DOM globals) so it is tested under node.

import "./prismSetup";
// prismjs's main module: the core with markup, css, clike and javascript.
import Prism from "prismjs";
import "prismjs/components/prism-typescript";
import "prismjs/components/prism-jsx";
import "prismjs/components/prism-tsx";
import "prismjs/components/prism-json";
import "prismjs/components/prism-bash";
import "prismjs/components/prism-python";
import "prismjs/components/prism-rust";
import "prismjs/components/prism-go";
import "prismjs/components/prism-c";
import "prismjs/components/prism-cpp";
import "prismjs/components/prism-java";
import "prismjs/components/prism-csharp";
import "prismjs/components/prism-diff";
import "prismjs/components/prism-yaml";
import "prismjs/components/prism-toml";
import "prismjs/components/prism-sql";

/** Longest code block that is highlighted (characters); longer ones are plain text. Some
 *  grammars are superlinear on hostile input (bash's nested `$("${`, markup's unclosed tags:
 *  about 0.1 s for 8,000 such characters on a loaded 2-core machine, against ~1 ms for
 *  ordinary code), so this bounds the worst cost of a block. */
export const MAX_HIGHLIGHT_CHARS = 8_000;
/** Longest line a highlighted block may have (minified code is plain text). */
export const MAX_HIGHLIGHT_LINE = 1_000;

/** Fence info words that name a grammar under another name. */
const ALIASES: Record<string, string> = {
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  node: "javascript",
  ts: "typescript",
  mts: "typescript",
  sh: "bash",
  shell: "bash",
  zsh: "bash",
  console: "bash",
  shellscript: "bash",
  py: "python",
  python3: "python",
  rs: "rust",
  golang: "go",
  h: "c",
  "c++": "cpp",
  cc: "cpp",
  hpp: "cpp",
  cs: "csharp",
  "c#": "csharp",
  yml: "yaml",
  html: "markup",
  xml: "markup",
  svg: "markup",
  patch: "diff",
  jsonc: "json",
  json5: "json",
};

/** The grammar's name for a fence's language word, if there is one. */
export function grammarName(lang: string): string | undefined {
  const l = lang.toLowerCase();
  const name = ALIASES[l] ?? l;
  return Object.prototype.hasOwnProperty.call(Prism.languages, name) && typeof Prism.languages[name] === "object" ? name : undefined;
}

/** A piece of a code block: its text and, for a token, its kind (`keyword`, `string`, …). */
export interface CodePiece {
  text: string;
  kind?: string;
}

/** Characters handed to the tokenizer so far (tests: bounded by the caps). */
export const highlightStats = { chars: 0 };

/** Only word characters and dashes reach a class name. */
const KIND = /^[a-z][a-z0-9-]{0,30}$/;

/**
 * `code` in pieces with their token kinds, or undefined when it is not highlighted (no grammar
 * for `lang`, or over the caps). The pieces' texts joined are `code` exactly.
 */
export function highlightCode(code: string, lang: string): CodePiece[] | undefined {
  const name = grammarName(lang);
  if (name === undefined || code.length > MAX_HIGHLIGHT_CHARS || longestLine(code) > MAX_HIGHLIGHT_LINE) return undefined;
  highlightStats.chars += code.length;
  const stream = Prism.tokenize(code, Prism.languages[name]!);
  const out: CodePiece[] = [];
  // Tokens nest (a string's interpolation holds tokens): walked with a stack, the innermost
  // token's kind wins.
  const todo: Array<{ item: string | Prism.Token; kind?: string }> = [];
  for (let i = stream.length - 1; i >= 0; i--) todo.push({ item: stream[i]! });
  while (todo.length > 0) {
    const { item, kind } = todo.pop()!;
    if (typeof item === "string") {
      if (item !== "") out.push(kind === undefined ? { text: item } : { text: item, kind });
      continue;
    }
    const own = KIND.test(item.type) ? item.type : kind;
    const c = item.content;
    if (typeof c === "string") todo.push({ item: c, kind: own });
    else if (Array.isArray(c)) for (let i = c.length - 1; i >= 0; i--) todo.push({ item: c[i]!, kind: own });
    else todo.push({ item: c, kind: own });
  }
  return out;
}

function longestLine(code: string): number {
  let max = 0;
  let start = 0;
  for (;;) {
    const nl = code.indexOf("\n", start);
    const end = nl < 0 ? code.length : nl;
    max = Math.max(max, end - start);
    if (nl < 0) return max;
    start = nl + 1;
  }
}
