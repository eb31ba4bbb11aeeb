import { test } from "node:test";
import assert from "node:assert/strict";
import { parseInline, parseMarkdown, renderBlocks, safeHref, type DomLike, type ElementLike } from "../../src/webview/markdown";

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
    const attrs = Object.entries(this.attrs).map(([k, v]) => ` ${k}="${esc(v)}"`).join("");
    const inner = this._text !== null ? esc(this._text) : this.children.map((c) => (typeof c === "string" ? esc(c) : c.html())).join("");
    return `<${this.tag}${attrs}>${inner}</${this.tag}>`;
  }
}
const doc: DomLike = { createElement: (t) => new FakeEl(t), createTextNode: (t) => t };
const render = (md: string) => {
  const root = new FakeEl("div");
  renderBlocks(doc, parseMarkdown(md), root);
  return root.html();
};

test("common markdown renders to the expected elements", () => {
  assert.equal(render("# Title\n\nSome **bold** and *em* and `code`."),
    "<div><h1>Title</h1><p>Some <strong>bold</strong> and <em>em</em> and <code>code</code>.</p></div>");
  assert.equal(render("- a\n- b\n\n1. x\n2. y"), "<div><ul><li>a</li><li>b</li></ul><ol><li>x</li><li>y</li></ol></div>");
  assert.equal(render("```ts\nconst a = 1 < 2;\n```"), '<div><pre><code data-lang="ts">const a = 1 &lt; 2;</code></pre></div>');
  assert.equal(render("> quoted"), "<div><blockquote><p>quoted</p></blockquote></div>");
});

test("HTML in agent text stays text", () => {
  const out = render('<img src=x onerror="alert(1)"> <script>alert(1)</script>');
  assert.ok(!out.includes("<img"), out);
  assert.ok(!out.includes("<script"), out);
  assert.ok(out.includes("&lt;script&gt;"), out);
});

test("links keep only http(s)/mailto targets", () => {
  assert.equal(safeHref("javascript:alert(1)"), undefined);
  assert.equal(safeHref(" JavaScript:alert(1)"), undefined);
  assert.equal(safeHref("data:text/html,x"), undefined);
  assert.equal(safeHref("https://example.com"), "https://example.com");
  assert.equal(render("[click](javascript:alert(1))"), "<div><p>click</p></div>");
  assert.equal(render("[site](https://example.com)"), '<div><p><a href="https://example.com" title="https://example.com">site</a></p></div>');
});

test("an unclosed fence (still streaming) renders as code so far", () => {
  assert.equal(render("text\n```\npartial"), "<div><p>text</p><pre><code>partial</code></pre></div>");
});

test("escapes and unmatched markers are literal", () => {
  assert.deepEqual(parseInline("a \\*b\\* c * d"), [{ t: "text", text: "a *b* c * d" }]);
  assert.deepEqual(parseInline("2 * 3 = 6"), [{ t: "text", text: "2 * 3 = 6" }]);
});
