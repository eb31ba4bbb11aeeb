import { test } from "node:test";
import assert from "node:assert/strict";
import {
  MAX_NESTING,
  StreamingMarkdown,
  renderMarkdown,
  safeHref,
  stableBoundary,
  type DomLike,
  type ElementLike,
} from "../../src/webview/markdown";
import { MAX_HIGHLIGHT_CHARS, grammarName, highlightCode, highlightStats } from "../../src/webview/highlight";

/** A fake DOM that records what the renderer builds; it has no HTML parser to abuse. */
class FakeEl implements ElementLike {
  children: Array<FakeEl | string> = [];
  attrs: Record<string, string> = {};
  private _text: string | null = null;
  constructor(readonly tag: string) {}
  appendChild(c: unknown) {
    this.children.push(c as FakeEl | string);
    return c;
  }
  replaceChildren(...nodes: unknown[]) {
    this._text = null;
    this.children = nodes as Array<FakeEl | string>;
  }
  setAttribute(n: string, v: string) {
    this.attrs[n] = v;
  }
  get textContent() {
    return this._text;
  }
  set textContent(v: string | null) {
    this._text = v;
  }
  html(): string {
    const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const attrs = Object.entries(this.attrs)
      .map(([k, v]) => ` ${k}="${esc(v)}"`)
      .join("");
    const inner = this._text !== null ? esc(this._text) : this.children.map((c) => (typeof c === "string" ? esc(c) : c.html())).join("");
    return `<${this.tag}${attrs}>${inner}</${this.tag}>`;
  }
  /** Depth of the element tree (iterative). */
  depth(): number {
    let max = 0;
    const todo: Array<[FakeEl, number]> = [[this, 1]];
    while (todo.length) {
      const [e, d] = todo.pop()!;
      max = Math.max(max, d);
      for (const c of e.children) if (typeof c !== "string") todo.push([c, d + 1]);
    }
    return max;
  }
}

/** A fake document that counts what it creates. */
function countingDoc() {
  const counts = { elements: 0, texts: 0 };
  const doc = {
    createElement: (t: string) => (counts.elements++, new FakeEl(t)),
    createTextNode: (t: string) => (counts.texts++, t),
  } satisfies DomLike;
  return { doc, counts };
}
/** A code block as the renderer builds it: the bar (language, Copy, Insert), then `inner` in
 *  pre > code. */
const codeHtml = (lang: string, inner: string) => {
  const l = lang ? ` (${lang})` : "";
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${lang || "text"}</span>` +
    `<button type="button" class="code-copy icon" title="Copy the code" aria-label="Copy the code${l}"><i class="codicon codicon-copy" aria-hidden="true"></i> Copy</button>` +
    `<button type="button" class="code-insert icon" title="Insert the code at the editor's cursor" aria-label="Insert the code at the editor's cursor${l}"><i class="codicon codicon-insert" aria-hidden="true"></i> Insert</button>` +
    `</div><pre><code${lang ? ` data-lang="${lang}"` : ""}>${inner}</code></pre></div>`
  );
};
const render = (md: string) => {
  const root = new FakeEl("div");
  renderMarkdown(countingDoc().doc, md, root);
  return root.html();
};

test("common markdown renders to the expected elements", () => {
  assert.equal(
    render("# Title\n\nSome **bold** and *em* and `code`."),
    "<div><h1>Title</h1><p>Some <strong>bold</strong> and <em>em</em> and <code>code</code>.</p></div>",
  );
  assert.equal(render("- a\n- b\n\n1. x\n2. y"), "<div><ul><li>a</li><li>b</li></ul><ol><li>x</li><li>y</li></ol></div>");
  assert.equal(render("3. c\n4. d"), '<div><ol start="3"><li>c</li><li>d</li></ol></div>');
  assert.equal(
    render("```ts\nconst a = 1 < 2;\n```"),
    `<div>${codeHtml(
      "ts",
      '<span class="tok-keyword">const</span> a <span class="tok-operator">=</span> <span class="tok-number">1</span> <span class="tok-operator">&lt;</span> <span class="tok-number">2</span><span class="tok-punctuation">;</span>',
    )}</div>`,
  );
  assert.equal(render("```\nplain < text\n```"), `<div>${codeHtml("", "plain &lt; text")}</div>`);
  assert.equal(render("```nosuchlang\nx = 1\n```"), `<div>${codeHtml("nosuchlang", "x = 1")}</div>`, "no grammar: plain, labelled");
  assert.equal(render("> quoted"), "<div><blockquote><p>quoted</p></blockquote></div>");
  assert.equal(render("a\n\n---\n\nb"), "<div><p>a</p><hr></hr><p>b</p></div>");
});

test("underscores inside words stay text: snake_case_names are not italics", () => {
  assert.equal(render("call snake_case_names and my_var_x now"), "<div><p>call snake_case_names and my_var_x now</p></div>");
  assert.equal(render("_em_ but a_b_c"), "<div><p><em>em</em> but a_b_c</p></div>");
});

test("HTML in agent text stays text", () => {
  const out = render('<img src=x onerror="alert(1)"> <script>alert(1)</script>\n\n<div onclick="x()">block</div>');
  assert.ok(!out.includes("<img"), out);
  assert.ok(!out.includes("<script"), out);
  assert.ok(!out.includes("<div onclick"), out);
  assert.ok(out.includes("&lt;script&gt;"), out);
});

test("links keep only http(s)/mailto targets; images become their alt text", () => {
  assert.equal(safeHref("javascript:alert(1)"), undefined);
  assert.equal(safeHref(" JavaScript:alert(1)"), undefined);
  assert.equal(safeHref("data:text/html,x"), undefined);
  assert.equal(safeHref("https://example.com"), "https://example.com");
  assert.equal(render("[click](javascript:alert(1))"), "<div><p>click</p></div>");
  assert.equal(render("[**bold** click](vbscript:x) after"), "<div><p><strong>bold</strong> click after</p></div>");
  assert.equal(render("<javascript:alert(1)>"), "<div><p>javascript:alert(1)</p></div>");
  assert.equal(
    render("[site](https://example.com)"),
    '<div><p><a href="https://example.com" title="https://example.com">site</a></p></div>',
  );
  assert.equal(render("[m](mailto:a@b.c)"), '<div><p><a href="mailto:a@b.c" title="mailto:a@b.c">m</a></p></div>');
  assert.equal(render("![alt text](https://evil.example/x.png)"), "<div><p>alt text</p></div>");
  assert.equal(render("see https://example.com"), "<div><p>see https://example.com</p></div>", "no linkify");
});

test("no attribute but href/title/start/data-lang is ever set (no style, no handlers)", () => {
  const root = new FakeEl("div");
  renderMarkdown(countingDoc().doc, '| a | b |\n|:--|--:|\n| 1 | 2 |\n\n[x](https://e.org "t")\n\n```js onload=x\nlet y\n```', root);
  const seen = new Set<string>();
  const todo: FakeEl[] = [root];
  while (todo.length) {
    const e = todo.pop()!;
    for (const k of Object.keys(e.attrs)) seen.add(k);
    for (const c of e.children) if (typeof c !== "string") todo.push(c);
  }
  assert.deepEqual(
    [...seen].filter((k) => !["href", "title", "start", "data-lang", "class", "type", "aria-label", "aria-hidden"].includes(k)),
    [],
  );
  // Classes are the renderer's own words or a token kind, never agent text.
  const OWN = /^(code-block|code-head|code-lang|code-copy icon|code-insert icon|codicon codicon-(copy|insert)|tok-[a-z][a-z0-9-]*)$/;
  const classes: string[] = [];
  const all: FakeEl[] = [root];
  while (all.length) {
    const e = all.pop()!;
    if (e.attrs.class !== undefined) classes.push(e.attrs.class);
    for (const c of e.children) if (typeof c !== "string") all.push(c);
  }
  assert.deepEqual(
    classes.filter((c) => !OWN.test(c)),
    [],
  );
  assert.ok(classes.includes("tok-keyword"), "the js block is highlighted");
  assert.match(root.html(), /<table>/);
});

test("an unclosed fence (still streaming) renders as code so far, plain until it closes", () => {
  assert.equal(render("text\n```\npartial"), `<div><p>text</p>${codeHtml("", "partial")}</div>`);
  assert.equal(render("```js\nlet x"), `<div>${codeHtml("js", "let x")}</div>`, "not highlighted while open");
  assert.equal(render("```js\nlet x\n``"), `<div>${codeHtml("js", "let x\n``")}</div>`, "a short marker does not close it");
  assert.match(render("```js\nlet x\n```"), /<span class="tok-keyword">let<\/span> x/);
  assert.match(render("~~~~js\nlet x\n~~~~~\n\nafter"), /<span class="tok-keyword">let<\/span> x/);
  assert.match(render("> ```js\n> let x\n> ```"), /<span class="tok-keyword">let<\/span> x/, "in a quote");
  assert.match(render("- item\n\n  ```js\n  let x\n  ```"), /<span class="tok-keyword">let<\/span> x/, "in a list item");
  assert.doesNotMatch(render("> ```js\n> let x"), /tok-/, "an open one in a quote");
});

test("HTML in code stays text, highlighted or not", () => {
  for (const lang of ["html", "js", "", "nosuchlang"]) {
    const root = new FakeEl("div");
    renderMarkdown(countingDoc().doc, "```" + lang + '\n<script>alert(1)</script><img src=x onerror="alert(2)">\n```', root);
    const tags = new Set<string>();
    const todo: FakeEl[] = [root];
    let text = "";
    while (todo.length) {
      const e = todo.pop()!;
      tags.add(e.tag);
      for (const c of e.children) if (typeof c !== "string") todo.push(c);
    }
    assert.deepEqual(
      [...tags].filter((t) => !["div", "span", "button", "i", "pre", "code"].includes(t)),
      [],
      lang,
    );
    // The code's text is exactly what the agent wrote.
    const code = ((root.children[0] as FakeEl).children[1] as FakeEl).children[0] as FakeEl;
    assert.equal(code.tag, "code");
    text = code.textContent ?? code.children.map((x) => (typeof x === "string" ? x : (x.textContent ?? ""))).join("");
    assert.equal(text, '<script>alert(1)</script><img src=x onerror="alert(2)">', lang);
  }
});

test("highlightCode: pieces join to the code; over the caps or without a grammar it declines", () => {
  const code = 'fn main() {\n    let s = "a \\" b"; // c\n}';
  const pieces = highlightCode(code, "rust")!;
  assert.equal(pieces.map((p) => p.text).join(""), code);
  assert.ok(pieces.some((p) => p.kind === "string" && p.text.includes('\\"')));
  assert.ok(pieces.some((p) => p.kind === "comment"));
  assert.equal(grammarName("TS"), "typescript");
  assert.equal(grammarName("sh"), "bash");
  assert.equal(grammarName("toString"), undefined, "no inherited property is a grammar");
  assert.equal(grammarName("__proto__"), undefined);
  assert.equal(highlightCode("x", "nosuchlang"), undefined);
  assert.equal(highlightCode("a".repeat(MAX_HIGHLIGHT_CHARS + 1), "js"), undefined);
  assert.equal(highlightCode("let a = 1;" + " ".repeat(2_000), "js"), undefined, "a very long line (minified code)");
  assert.ok(highlightCode("let a = 1;\n".repeat(500), "js"));
});

test("streaming a long code block tokenizes it a bounded number of times", () => {
  const block = "```ts\n" + "const value: number = compute(1, 'two');\n".repeat(180) + "```\n\nDone.\n";
  const s = new StreamingMarkdown(countingDoc().doc, new FakeEl("div"));
  const before = highlightStats.chars;
  for (let i = 0; i < block.length; i += 13) {
    s.append(block.slice(i, i + 13));
    s.render();
  }
  const tokenized = highlightStats.chars - before;
  assert.ok(tokenized > 0, "the closed block is highlighted");
  assert.ok(tokenized <= 3 * block.length, `tokenized ${tokenized} characters for a ${block.length}-character block`);
});

test("escapes and unmatched markers are literal", () => {
  assert.equal(render("a \\*b\\* c * d"), "<div><p>a *b* c * d</p></div>");
  assert.equal(render("2 * 3 = 6"), "<div><p>2 * 3 = 6</p></div>");
});

// The inputs that made the former hand-written renderer take seconds or throw. Time is judged
// against the same renderer on ordinary text of the same length (so a slow machine does not
// fail it, and a quadratic renderer fails on any machine), plus a generous constant; the DOM
// built is bounded by the input's length.
const PATHOLOGICAL: Array<[string, string]> = [
  ["a heading with 2,000 spaces", "# a" + " ".repeat(2000) + "b"],
  ["40,000 [", "[".repeat(40_000)],
  ["5,000 >", ">".repeat(5_000)],
  ["40,000 *", "*".repeat(40_000)],
  ["20,000 `[a](` ", "[a](".repeat(10_000)],
  ["nested emphasis", "*a **b ".repeat(5_000)],
  // Code blocks: one past the highlighter's cap (plain), and ones inside it built to make a
  // regular-expression grammar backtrack (quotes and escapes, unclosed comments and strings).
  ["a 300,000-character python block", "```python\n" + "x = '<b>' # <script>\n".repeat(15_000) + "```\n"],
  ["a js block of quotes and backslashes", "```js\n" + ('"\\'.repeat(150) + "'\\".repeat(150) + "\n").repeat(10) + "```"],
  ["a js block of unclosed comments and templates", "```js\n" + ("/*`${".repeat(150) + "\n").repeat(10) + "```"],
  ["a bash block of nested substitutions", "```bash\n" + ('$("${'.repeat(150) + "\n").repeat(4) + "```"],
  ["a markup block of open tags", "```html\n" + ("<a b='".repeat(150) + "\n").repeat(4) + "```"],
  ["a python block of open strings", "```python\n" + (("'".repeat(3) + '"'.repeat(3)).repeat(150) + "\n").repeat(8) + "```"],
  ["many small code blocks", "```rust\nfn a() {}\n```\n".repeat(3_000)],
];

function bestOf(n: number, fn: () => void): number {
  let best = Infinity;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

for (const [name, input] of PATHOLOGICAL) {
  test(`pathological input renders in linear time and bounded DOM: ${name}`, () => {
    const ordinary = "Some words, a **bold** one and `code`.\n".repeat(Math.ceil(input.length / 40)).slice(0, input.length);
    const baseline = bestOf(3, () => renderMarkdown(countingDoc().doc, ordinary, new FakeEl("div")));
    const { doc, counts } = countingDoc();
    const root = new FakeEl("div");
    let threw: unknown;
    const took = bestOf(1, () => {
      try {
        renderMarkdown(doc, input, root);
      } catch (e) {
        threw = e;
      }
    });
    assert.equal(threw, undefined, `it threw: ${threw}`);
    assert.ok(
      took <= 30 * baseline + 250,
      `${name}: ${took.toFixed(1)} ms vs ${baseline.toFixed(1)} ms for ordinary text of the same length`,
    );
    assert.ok(counts.elements + counts.texts <= input.length + 20, `${name}: ${counts.elements} elements, ${counts.texts} text nodes`);
    assert.ok(root.depth() <= MAX_NESTING + 5, `${name}: depth ${root.depth()}`);
  });
}

test("blocks nested past the cap are shown as text, not dropped; inline markers past it stay text", () => {
  const root = new FakeEl("div");
  renderMarkdown(countingDoc().doc, ">".repeat(5_000) + " deep", root);
  assert.ok(root.depth() <= 3, `depth ${root.depth()}`);
  assert.equal(root.html(), `<div><p>${"&gt;".repeat(5_000)} deep</p></div>`);
  assert.equal(render("# a" + " ".repeat(2000) + "b"), `<div><h1>a${" ".repeat(2000)}b</h1></div>`);
  const nested = "[".repeat(200) + "x" + "]".repeat(200);
  assert.equal(render(nested), `<div><p>${nested}</p></div>`);
});

test("stableBoundary: after a blank line, outside fences, before a new top-level block", () => {
  assert.equal(stableBoundary("a\n\nb\n"), 3);
  assert.equal(stableBoundary("a\n\nb"), 0, "the last line may still grow");
  assert.equal(stableBoundary("- a\n\n- b\n"), 0, "a list is never cut");
  assert.equal(stableBoundary("- a\n\n  more\n"), 0, "nor an indented continuation");
  assert.equal(stableBoundary("```\na\n\nb\n```\n"), 0, "nor a fence");
  assert.equal(stableBoundary("```\na\n\nb\n```\n\nc\n"), 14);
  assert.equal(stableBoundary("~~~\n```\n\nx\n"), 0, "only the same marker closes a fence");
  assert.equal(stableBoundary("p\n\nq\n\nr\n", 3), 6);
});

test("streaming: the text renders as a whole would, and each character is parsed a bounded number of times", () => {
  const paragraphs = Array.from(
    { length: 300 },
    (_, i) => `Paragraph ${i} with **bold** and a [link](https://e.org/${i}).\n\n- item ${i}\n- more\n\n\`\`\`\ncode ${i}\n\n\`\`\`\n`,
  );
  const text = paragraphs.join("\n");
  const { doc } = countingDoc();
  const root = new FakeEl("div");
  const s = new StreamingMarkdown(doc, root);
  for (let i = 0; i < text.length; i += 17) {
    s.append(text.slice(i, i + 17));
    s.render();
  }
  assert.equal(s.source, text);
  const whole = new FakeEl("div");
  renderMarkdown(countingDoc().doc, text, whole);
  const flat = (e: FakeEl) => e.html().replace(/<\/?div>/g, "");
  assert.equal(flat(root), flat(whole), "the same DOM as one render (apart from the wrappers)");
  const updates = Math.ceil(text.length / 17);
  assert.ok(s.parsedChars < 40 * text.length, `parsed ${s.parsedChars} characters for ${text.length} (${updates} updates)`);
  assert.ok(s.parsedChars < (text.length * updates) / 50, "far from re-parsing the whole message on every update");
});
