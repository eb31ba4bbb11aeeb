// Agent text as markdown, rendered safely and in time linear in its length. Code blocks come
// with a bar (language, Copy, Insert) and syntax highlighting from highlight.ts's tokens.
//
// Agent text is untrusted. It is parsed by markdown-it (pinned; CommonMark, linear-time
// parsers) with raw HTML off and no linkify, into tokens; the tokens are turned into DOM here
// with createElement/createTextNode/textContent only. No string of agent text is ever parsed
// as HTML, no `style` or event attribute is ever set (the CSP forbids inline styles and
// scripts anyway), and links keep only http(s)/mailto targets (other links keep their words).
// Nesting is capped (markdown-it's maxNesting) and the DOM is built without recursion, so no
// input can overflow the stack.
//
// StreamingMarkdown renders a message that grows chunk by chunk: the part before the last
// safe block boundary is rendered once and kept; only the rest is parsed again on an update.
//
// Pure (no DOM globals) so it is tested under node with a fake document.

import MarkdownIt from "markdown-it";
import { highlightCode } from "./highlight";

type Token = MarkdownIt.Token;

const SAFE_URL = /^(https?:|mailto:)/i;

export function safeHref(url: string): string | undefined {
  const u = url.trim();
  return SAFE_URL.test(u) ? u : undefined;
}

/** Deepest nesting of blocks or inline markup markdown-it builds; deeper inline markers stay
 *  text, and a block nested this deep is shown as plain text. */
export const MAX_NESTING = 50;

const md = new MarkdownIt("default", { html: false, linkify: false, typographer: false, breaks: false, maxNesting: MAX_NESTING });
// Every syntactic link is parsed as a link, so an unsafe one can be shown as its words (the
// target is checked when the DOM is built, below).
md.validateLink = () => true;

/** The minimal DOM surface the renderer needs (document in the webview, a fake in tests). */
export interface DomLike {
  createElement(tag: string): ElementLike;
  createTextNode(text: string): unknown;
}
export interface ElementLike {
  appendChild(child: unknown): unknown;
  replaceChildren(...nodes: unknown[]): void;
  setAttribute(name: string, value: string): void;
  textContent: string | null;
}

/** Tags the renderer may create for a token's `tag` (anything else becomes a span or div). */
const BLOCK_TAGS = new Set([
  "p",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "blockquote",
  "ul",
  "ol",
  "li",
  "table",
  "thead",
  "tbody",
  "tr",
  "th",
  "td",
]);
const INLINE_TAGS = new Set(["em", "strong", "s"]);

/** Parses `src` and appends its DOM to `parent`. */
export function renderMarkdown(doc: DomLike, src: string, parent: ElementLike): void {
  const tokens = md.parse(src, {});
  // At the nesting cap markdown-it stops parsing the block and drops what follows: show the
  // text as it is instead (only pathological input nests blocks this deep).
  if (tokens.some((t) => t.level >= MAX_NESTING - 1)) {
    const p = doc.createElement("p");
    p.textContent = src;
    parent.appendChild(p);
    return;
  }
  let lines: string[] | undefined;
  // A fence is highlighted once it is closed: while its text still streams in it is plain (so
  // a long block is not tokenized again on every update).
  const closed = (t: Token): boolean => {
    if (t.type !== "fence" || !t.map) return false;
    const last = (lines ??= src.split("\n"))[t.map[1] - 1];
    if (t.map[1] - 1 <= t.map[0] || last === undefined) return false;
    // The closing line, inside quotes or list items too (their markers and indent before it).
    const m = CLOSING_FENCE.exec(last);
    return !!m && m[1]![0] === t.markup[0] && m[1]!.length >= t.markup.length;
  };
  renderTokens(doc, tokens, parent, closed);
}

function renderTokens(doc: DomLike, tokens: Token[], root: ElementLike, closed: (t: Token) => boolean): void {
  // A stack instead of recursion: depth is bounded by maxNesting, but a flat loop cannot
  // overflow whatever the tokens are.
  const stack: ElementLike[] = [root];
  const top = () => stack[stack.length - 1]!;
  for (const t of tokens) {
    if (t.type === "inline") {
      renderInline(doc, t.children ?? [], top());
      continue;
    }
    // Paragraphs of tight list items are hidden: their text goes straight into the item.
    if (t.hidden) continue;
    if (t.nesting === 1) {
      const tag = BLOCK_TAGS.has(t.tag) ? t.tag : "div";
      const el = doc.createElement(tag);
      if (t.type === "ordered_list_open") {
        const start = Number(t.attrGet("start") ?? 1);
        if (Number.isInteger(start) && start !== 1) el.setAttribute("start", String(start));
      }
      top().appendChild(el);
      stack.push(el);
    } else if (t.nesting === -1) {
      if (stack.length > 1) stack.pop();
    } else if (t.type === "fence" || t.type === "code_block") {
      const lang = (t.info ?? "").trim().split(/\s+/)[0] ?? "";
      const text = t.content.endsWith("\n") ? t.content.slice(0, -1) : t.content;
      top().appendChild(codeBlock(doc, text, LANG.test(lang) ? lang : "", closed(t)));
    } else if (t.type === "hr") {
      top().appendChild(doc.createElement("hr"));
    } else if (t.content) {
      // html_block cannot occur (html: false); anything else unknown is shown as text.
      top().appendChild(doc.createTextNode(t.content));
    }
  }
}

/** What a fence's language word may be to be shown (and named in `data-lang`). */
const LANG = /^[\w+#.-]{1,30}$/;

/**
 * A code block: a bar with its language and the Copy and Insert buttons (the webview handles
 * their clicks, by class: `code-copy`, `code-insert`), then the code, highlighted when
 * highlight.ts has a grammar for `lang` and the fence is closed (a span per token, text set
 * with textContent).
 */
function codeBlock(doc: DomLike, text: string, lang: string, highlight: boolean): ElementLike {
  const box = doc.createElement("div");
  box.setAttribute("class", "code-block");
  const head = doc.createElement("div");
  head.setAttribute("class", "code-head");
  const label = doc.createElement("span");
  label.setAttribute("class", "code-lang");
  label.textContent = lang || "text";
  head.appendChild(label);
  for (const [cls, icon, words, title] of [
    ["code-copy", "copy", "Copy", "Copy the code"],
    ["code-insert", "insert", "Insert", "Insert the code at the editor's cursor"],
  ] as const) {
    const b = doc.createElement("button");
    b.setAttribute("type", "button");
    b.setAttribute("class", `${cls} icon`);
    b.setAttribute("title", title);
    b.setAttribute("aria-label", `${title}${lang ? ` (${lang})` : ""}`);
    const i = doc.createElement("i");
    i.setAttribute("class", `codicon codicon-${icon}`);
    i.setAttribute("aria-hidden", "true");
    b.appendChild(i);
    b.appendChild(doc.createTextNode(` ${words}`));
    head.appendChild(b);
  }
  box.appendChild(head);
  const pre = doc.createElement("pre");
  const code = doc.createElement("code");
  if (lang) code.setAttribute("data-lang", lang);
  const pieces = lang && highlight ? highlightCode(text, lang) : undefined;
  if (pieces === undefined) code.textContent = text;
  else
    for (const p of pieces) {
      if (p.kind === undefined) {
        code.appendChild(doc.createTextNode(p.text));
        continue;
      }
      const span = doc.createElement("span");
      span.setAttribute("class", `tok-${p.kind}`);
      span.textContent = p.text;
      code.appendChild(span);
    }
  pre.appendChild(code);
  box.appendChild(pre);
  return box;
}

function renderInline(doc: DomLike, tokens: Token[], root: ElementLike): void {
  // An unsafe link pushes its parent again: its words go where the link would have been.
  const stack: ElementLike[] = [root];
  const top = () => stack[stack.length - 1]!;
  for (const t of tokens) {
    switch (t.type) {
      case "text":
        top().appendChild(doc.createTextNode(t.content));
        break;
      case "code_inline": {
        const c = doc.createElement("code");
        c.textContent = t.content;
        top().appendChild(c);
        break;
      }
      case "softbreak":
        top().appendChild(doc.createTextNode("\n"));
        break;
      case "hardbreak":
        top().appendChild(doc.createElement("br"));
        break;
      case "link_open": {
        const href = safeHref(String(t.attrGet("href") ?? ""));
        if (href === undefined) {
          stack.push(top());
          break;
        }
        const a = doc.createElement("a");
        a.setAttribute("href", href);
        a.setAttribute("title", href);
        top().appendChild(a);
        stack.push(a);
        break;
      }
      case "image":
        // No images from agent text (the CSP would block remote ones anyway): the alt text.
        top().appendChild(doc.createTextNode(t.content));
        break;
      default:
        if (t.nesting === 1) {
          const el = doc.createElement(INLINE_TAGS.has(t.tag) ? t.tag : "span");
          top().appendChild(el);
          stack.push(el);
        } else if (t.nesting === -1) {
          if (stack.length > 1) stack.pop();
        } else if (t.content) {
          top().appendChild(doc.createTextNode(t.content));
        }
    }
  }
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const CLOSING_FENCE = /^[ \t>]*(`{3,}|~{3,})[ \t]*$/;
const LIST_ITEM = /^(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)/;

/**
 * The end of the longest prefix of `text[from..]` that can be rendered on its own and never
 * change, or `from` when there is none: the position after a blank line, outside any fenced
 * code block, whose next line is complete and starts a new top-level block at column 0 that
 * is not a list item (so a list or an indented continuation is never cut). `from` must itself
 * be such a boundary (or 0). Reference definitions further on do not reach back across it.
 */
export function stableBoundary(text: string, from = 0): number {
  let best = from;
  let fence: string | undefined; // the opening marker while inside a fenced block
  let blankBefore = false;
  let pos = from;
  for (;;) {
    const nl = text.indexOf("\n", pos);
    if (nl < 0) return best; // the last line may still grow
    const line = text.slice(pos, nl);
    if (fence !== undefined) {
      const m = FENCE.exec(line);
      if (m && m[1]![0] === fence[0] && m[1]!.length >= fence.length && line.slice(m[0].length).trim() === "") fence = undefined;
      blankBefore = false;
    } else {
      const blank = line.trim() === "";
      if (!blank && blankBefore && /^\S/.test(line) && !LIST_ITEM.test(line)) best = pos;
      const m = FENCE.exec(line);
      if (m) fence = m[1]!;
      blankBefore = blank;
    }
    pos = nl + 1;
  }
}

/**
 * A message's markdown, rendered incrementally as it grows: `append` adds text, `render`
 * updates the DOM, parsing only what follows the last stable boundary (everything before it was
 * rendered once and is kept). So a message streamed in many chunks costs time linear in its
 * length, not in its length times the number of updates.
 */
export class StreamingMarkdown {
  private text = "";
  /** text[0..stable] is rendered into `done` and never parsed again. */
  private stable = 0;
  private readonly done: ElementLike;
  private readonly live: ElementLike;
  /** Characters handed to the parser so far (for tests: each one is parsed a bounded number of times). */
  parsedChars = 0;

  constructor(
    private readonly doc: DomLike,
    root: ElementLike,
  ) {
    this.done = doc.createElement("div");
    this.live = doc.createElement("div");
    root.replaceChildren(this.done, this.live);
  }

  get source(): string {
    return this.text;
  }

  append(chunk: string): void {
    this.text += chunk;
  }

  /** Brings the DOM up to date with the text appended so far. */
  render(): void {
    const boundary = stableBoundary(this.text, this.stable);
    if (boundary > this.stable) {
      this.parse(this.text.slice(this.stable, boundary), this.done);
      this.stable = boundary;
    }
    this.live.replaceChildren();
    this.parse(this.text.slice(this.stable), this.live);
  }

  private parse(src: string, into: ElementLike): void {
    this.parsedChars += src.length;
    renderMarkdown(this.doc, src, into);
  }
}
